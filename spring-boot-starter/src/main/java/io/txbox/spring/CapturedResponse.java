package io.txbox.spring;

import io.txbox.inbox.http.HttpResponseData;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.ByteArrayOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;

/**
 * A response that the application writes into memory, status, headers and body, without
 * touching the real response: what the idempotency filter stores, and then sends. {@code
 * sendError} becomes the status with a problem+json body, since the container's error page
 * would be rendered after the filter and never stored.
 */
final class CapturedResponse extends HttpServletResponseWrapper {
    private static final DateTimeFormatter HTTP_DATE = DateTimeFormatter.RFC_1123_DATE_TIME.withZone(ZoneOffset.UTC);

    private int status = SC_OK;
    /** Header names as first set, values in order; Content-Type is kept apart, as the Servlet API does. */
    private final Map<String, List<String>> headers = new LinkedHashMap<>();
    private @Nullable String contentType;
    private @Nullable String characterEncoding;
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    private @Nullable ServletOutputStream stream;
    private @Nullable PrintWriter writer;

    CapturedResponse(HttpServletResponse response) {
        super(response);
    }

    /** What the application answered. */
    HttpResponseData toResponseData() {
        if (writer != null) {
            writer.flush();
        }
        Map<String, List<String>> all = new LinkedHashMap<>();
        String type = getContentType();
        if (type != null) {
            all.put("Content-Type", List.of(type));
        }
        all.putAll(headers);
        return new HttpResponseData(status, all, body.toByteArray());
    }

    @Override
    public void setStatus(int sc) {
        status = sc;
    }

    @Override
    public int getStatus() {
        return status;
    }

    @Override
    public void sendError(int sc) {
        sendError(sc, null);
    }

    @Override
    public void sendError(int sc, @Nullable String msg) {
        HttpStatus known = HttpStatus.resolve(sc);
        String title = known == null ? "Error" : known.getReasonPhrase();
        resetBuffer();
        status = sc;
        contentType = MediaType.APPLICATION_PROBLEM_JSON_VALUE;
        characterEncoding = null;
        String json = "{\"type\":\"about:blank\",\"title\":\"" + title + "\",\"status\":" + sc + "}";
        body.writeBytes(json.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void sendRedirect(String location) {
        sendRedirect(location, SC_FOUND, true);
    }

    /** Servlet 6.1's variants (Spring Boot 4), which the wrapper would pass to the real response. */
    public void sendRedirect(String location, int sc, boolean clearBuffer) {
        if (clearBuffer) {
            resetBuffer();
        }
        status = sc;
        setHeader("Location", location);
    }

    public void sendRedirect(String location, int sc) {
        sendRedirect(location, sc, true);
    }

    public void sendRedirect(String location, boolean clearBuffer) {
        sendRedirect(location, SC_FOUND, clearBuffer);
    }

    public void setCharacterEncoding(@Nullable Charset charset) {
        setCharacterEncoding(charset == null ? null : charset.name());
    }

    @Override
    public void setHeader(String name, @Nullable String value) {
        if (name.equalsIgnoreCase("Content-Type")) {
            setContentType(value);
            return;
        }
        String existing = name(name);
        if (existing != null) {
            headers.remove(existing);
        }
        if (value != null) {
            headers.put(name, new ArrayList<>(List.of(value)));
        }
    }

    @Override
    public void addHeader(String name, @Nullable String value) {
        if (name.equalsIgnoreCase("Content-Type")) {
            setContentType(value);
            return;
        }
        if (value == null) {
            return;
        }
        String existing = name(name);
        headers.computeIfAbsent(existing == null ? name : existing, n -> new ArrayList<>()).add(value);
    }

    @Override
    public void setIntHeader(String name, int value) {
        setHeader(name, Integer.toString(value));
    }

    @Override
    public void addIntHeader(String name, int value) {
        addHeader(name, Integer.toString(value));
    }

    @Override
    public void setDateHeader(String name, long date) {
        setHeader(name, HTTP_DATE.format(Instant.ofEpochMilli(date)));
    }

    @Override
    public void addDateHeader(String name, long date) {
        addHeader(name, HTTP_DATE.format(Instant.ofEpochMilli(date)));
    }

    @Override
    public boolean containsHeader(String name) {
        return name.equalsIgnoreCase("Content-Type") ? contentType != null : name(name) != null;
    }

    @Override
    public @Nullable String getHeader(String name) {
        if (name.equalsIgnoreCase("Content-Type")) {
            return getContentType();
        }
        String existing = name(name);
        return existing == null ? null : headers.get(existing).get(0);
    }

    @Override
    public Collection<String> getHeaders(String name) {
        if (name.equalsIgnoreCase("Content-Type")) {
            String type = getContentType();
            return type == null ? List.of() : List.of(type);
        }
        String existing = name(name);
        return existing == null ? List.of() : List.copyOf(headers.get(existing));
    }

    @Override
    public Collection<String> getHeaderNames() {
        List<String> names = new ArrayList<>(headers.keySet());
        if (contentType != null) {
            names.add(0, "Content-Type");
        }
        return names;
    }

    @Override
    public void setContentType(@Nullable String type) {
        if (type == null) {
            contentType = null;
            return;
        }
        MediaType media = MediaType.parseMediaType(type);
        if (media.getCharset() != null) {
            characterEncoding = media.getCharset().name();
        }
        contentType = new MediaType(media.getType(), media.getSubtype(),
                media.getParameters().entrySet().stream().filter(e -> !e.getKey().equalsIgnoreCase("charset"))
                        .collect(java.util.stream.Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue))).toString();
    }

    @Override
    public @Nullable String getContentType() {
        if (contentType == null) {
            return null;
        }
        return characterEncoding == null ? contentType : contentType + ";charset=" + characterEncoding;
    }

    @Override
    public void setCharacterEncoding(@Nullable String charset) {
        if (writer == null) {
            characterEncoding = charset;
        }
    }

    @Override
    public String getCharacterEncoding() {
        return characterEncoding == null ? StandardCharsets.ISO_8859_1.name() : characterEncoding;
    }

    @Override
    public void setContentLength(int len) {
        // the stored body's own length is sent
    }

    @Override
    public void setContentLengthLong(long len) {
        // the stored body's own length is sent
    }

    @Override
    public void setLocale(Locale locale) {
        // the locale would set headers on the real response, which is written from the stored one
    }

    @Override
    public ServletOutputStream getOutputStream() {
        if (writer != null) {
            throw new IllegalStateException("getWriter() was already called for this response");
        }
        if (stream == null) {
            stream = new ServletOutputStream() {
                @Override
                public void write(int b) {
                    body.write(b);
                }

                @Override
                public void write(byte[] b, int off, int len) {
                    body.write(b, off, len);
                }

                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setWriteListener(WriteListener listener) {
                    throw new UnsupportedOperationException("the response is buffered for the Idempotency-Key filter");
                }
            };
        }
        return stream;
    }

    @Override
    public PrintWriter getWriter() {
        if (stream != null) {
            throw new IllegalStateException("getOutputStream() was already called for this response");
        }
        if (writer == null) {
            if (characterEncoding == null) {
                characterEncoding = StandardCharsets.ISO_8859_1.name();
            }
            writer = new PrintWriter(new OutputStreamWriter(body, Charset.forName(characterEncoding)));
        }
        return writer;
    }

    @Override
    public void flushBuffer() {
        if (writer != null) {
            writer.flush();
        }
    }

    @Override
    public boolean isCommitted() {
        return false;
    }

    @Override
    public void reset() {
        resetBuffer();
        status = SC_OK;
        headers.clear();
        contentType = null;
        characterEncoding = null;
    }

    @Override
    public void resetBuffer() {
        if (writer != null) {
            writer.flush();
        }
        body.reset();
    }

    /** The stored spelling of header {@code name}, or null. */
    private @Nullable String name(String name) {
        for (String n : headers.keySet()) {
            if (n.equalsIgnoreCase(name)) {
                return n;
            }
        }
        return null;
    }
}
