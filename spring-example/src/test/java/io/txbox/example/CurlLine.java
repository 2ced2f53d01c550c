package io.txbox.example;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@code curl} command line from the project's Markdown, sent the way curl sends it: HTTP/1.1,
 * {@code User-Agent: curl/...}, {@code Accept: *}{@code /*}, and for {@code -d} the method POST
 * and {@code Content-Type: application/x-www-form-urlencoded} unless a {@code -H} sets one. Only
 * the options the docs use are understood ({@code -i}, {@code -X}, {@code -H}, {@code -d}); any
 * other fails the test, so a doc line cannot quietly mean something the test does not send.
 *
 * @param method the request method
 * @param target the path and query, as written after the host
 * @param headers the headers curl sends besides {@code Host} and {@code Content-Length}
 * @param data the {@code -d} body, or {@code null}
 */
record CurlLine(String method, String target, Map<String, String> headers, String data) {
    /** What curl 7 and 8 send by default: the {@code User-Agent} differs only in the version. */
    static final String USER_AGENT = "curl/7.88.1";

    /** Every line starting with {@code curl } inside the fenced code blocks of a Markdown file. */
    static List<CurlLine> in(Path markdown) throws IOException {
        List<CurlLine> lines = new ArrayList<>();
        boolean fenced = false;
        for (String line : Files.readAllLines(markdown, StandardCharsets.UTF_8)) {
            if (line.strip().startsWith("```")) {
                fenced = !fenced;
            } else if (fenced && line.strip().startsWith("curl ")) {
                lines.add(parse(line.strip()));
            }
        }
        return lines;
    }

    static CurlLine parse(String commandLine) {
        List<String> words = words(commandLine);
        if (words.isEmpty() || !words.get(0).equals("curl")) {
            throw new IllegalArgumentException("not a curl command: " + commandLine);
        }
        String method = null;
        String url = null;
        String data = null;
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("User-Agent", USER_AGENT);
        headers.put("Accept", "*/*");
        List<String> given = new ArrayList<>();
        for (int i = 1; i < words.size(); i++) {
            String word = words.get(i);
            switch (word) {
                case "-i" -> { }
                case "-X" -> method = words.get(++i);
                case "-H" -> given.add(words.get(++i));
                case "-d" -> data = words.get(++i);
                default -> {
                    if (word.startsWith("-") || url != null) {
                        throw new IllegalArgumentException("the docs' curl lines may use -i, -X, -H, -d and one URL;"
                                + " unknown " + word + " in: " + commandLine);
                    }
                    url = word;
                }
            }
        }
        if (url == null) {
            throw new IllegalArgumentException("no URL in: " + commandLine);
        }
        if (data != null) {
            if (data.startsWith("@")) {
                throw new IllegalArgumentException("-d @file is not supported: " + commandLine);
            }
            headers.put("Content-Type", "application/x-www-form-urlencoded");
        }
        for (String header : given) {
            int colon = header.indexOf(':');
            String name = header.substring(0, colon).strip();
            // a -H replaces curl's own header of that name, whatever its case
            headers.keySet().removeIf(existing -> existing.equalsIgnoreCase(name));
            headers.put(name, header.substring(colon + 1).strip());
        }
        String afterScheme = url.contains("://") ? url.substring(url.indexOf("://") + 3) : url;
        int slash = afterScheme.indexOf('/');
        String target = slash < 0 ? "/" : afterScheme.substring(slash);
        return new CurlLine(method != null ? method : data != null ? "POST" : "GET", target, headers, data);
    }

    /** Sends it to {@code 127.0.0.1:port} instead of the host and port written in the docs. */
    HttpResponse<String> send(HttpClient http, String port) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + target))
                .version(HttpClient.Version.HTTP_1_1).timeout(Duration.ofSeconds(60))
                .method(method, data == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(data, StandardCharsets.UTF_8));
        headers.forEach(request::header);
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The line split as a POSIX shell splits it: single and double quotes, a {@code #} comment. */
    private static List<String> words(String line) {
        List<String> words = new ArrayList<>();
        StringBuilder word = null;
        char quote = 0;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quote == '"' && (c == '\\' || c == '$' || c == '`')) {
                throw new IllegalArgumentException("shell escapes and expansions are not supported: " + line);
            } else if (quote != 0) {
                if (c == quote) {
                    quote = 0;
                } else {
                    word.append(c);
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
                word = word == null ? new StringBuilder() : word;
            } else if (Character.isWhitespace(c)) {
                if (word != null) {
                    words.add(word.toString());
                    word = null;
                }
            } else if (c == '#' && word == null) {
                break;
            } else if (c == '\\' || c == '$' || c == '`') {
                throw new IllegalArgumentException("shell escapes and expansions are not supported: " + line);
            } else {
                word = word == null ? new StringBuilder() : word;
                word.append(c);
            }
        }
        if (quote != 0) {
            throw new IllegalArgumentException("unterminated quote: " + line);
        }
        if (word != null) {
            words.add(word.toString());
        }
        return words;
    }

    @Override
    public String toString() {
        return method + " " + target + " " + headers + (data == null ? "" : " " + data);
    }
}
