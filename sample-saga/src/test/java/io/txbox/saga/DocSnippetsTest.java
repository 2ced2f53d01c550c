package io.txbox.saga;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.relay.standalone.RelayConfig;
import java.io.IOException;
import java.io.StringReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The code blocks of every Markdown file of the project (README.md, the guides under docs/, the
 * modules' README.md and DEPLOY.md files, ...) are checked, so the docs cannot drift from the code:
 *
 * <ul>
 *   <li>every {@code ```properties} block loads as a Java properties file with no value
 *       carrying a trailing comment (a properties file has none: {@code key=value # note} makes
 *       {@code # note} part of the value), and where it holds {@code txbox.*} keys, the standalone
 *       relay's {@link RelayConfig} accepts it as it stands (and with its destinations, as {@code
 *       run} needs them);
 *   <li>every {@code ```java} block compiles against all modules, and names the import of every
 *       txbox type it uses, in the block or in its {@code given} comment: a reader who copies it
 *       must not have to guess a package.
 * </ul>
 *
 * <p>Java blocks are fragments, compiled by this convention:
 *
 * <ul>
 *   <li>The block is the body of a method {@code void snippet() throws Exception} in an abstract
 *       class that star-imports {@code java.sql}, {@code java.time}, {@code java.util}, {@code
 *       javax.sql} and JUnit's extension API, and no txbox package.
 *   <li>Leading {@code import} lines are the class's imports.
 *   <li>Leading lines that start with {@code @} or {@code static} are class members (for example
 *       {@code @RegisterExtension static final TestPostgres PG = ...;}).
 *   <li>{@code ...} stands for elided code: a line of its own, {@code { ... }} and {@code (...)}
 *       are dropped before compiling.
 *   <li>The names a fragment uses without declaring them are declared in an HTML comment right
 *       before the block, invisible on the rendered page: {@code <!-- given: DataSource ds;
 *       abstract void chargeCard(Connection tx, InboundMessage m); -->}. Its {@code import}
 *       statements are added to the imports (a single-type import wins over the star imports);
 *       everything else goes into the class body, so it may declare fields, abstract methods and
 *       nested types.
 *   <li>A properties block preceded by {@code <!-- application.properties -->} is a Spring Boot
 *       application's configuration: it must load, but is not checked as a relay configuration.
 *   <li>A block that shows a whole class of the project's tests is preceded by {@code <!-- copy
 *       of: path/from/the/root.java -->} instead, and must appear in that file verbatim (that
 *       file is compiled and run by its own module's tests). When the block is part of a file
 *       and leaves the file's imports out, the comment names the txbox ones after the path:
 *       {@code <!-- copy of: path/X.java; given: import io.txbox.inbox.Outcome; -->}; each must
 *       be one of the file's imports or name a type of the file's package.
 * </ul>
 */
class DocSnippetsTest {
    static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    static final Pattern FENCE = Pattern.compile("(?m)^```(\\w*)\\s*$");
    static final Pattern IMPORT = Pattern.compile("import\\s+(static\\s+)?[\\w.*]+\\s*;");
    /** Marks a block that shows a whole source file of the project's tests: it must appear there verbatim. */
    static final String COPY_OF = "copy of:";
    /** Marks a properties block that is a Spring Boot application's configuration, not the relay's. */
    static final String APPLICATION_PROPERTIES = "application.properties";
    static final List<String> IMPORTS = List.of("java.sql", "java.time", "java.util", "javax.sql", "org.junit.jupiter.api.extension");
    /** A public top-level type of a module's main sources. */
    static final Pattern PUBLIC_TYPE = Pattern.compile(
            "(?m)^public\\s+(?:(?:final|abstract|sealed|non-sealed|static)\\s+)*(?:class|interface|record|enum|@interface)\\s+(\\w+)");
    static final Pattern PACKAGE = Pattern.compile("(?m)^package\\s+([\\w.]+)\\s*;");

    /** One fenced block: where it is, its language, its text, and the given comment before it. */
    record Block(Path file, int line, String lang, String text, String given) {
        String where() {
            return ROOT.relativize(file) + ":" + line;
        }

        String className() {
            return "Snippet_" + ROOT.relativize(file).toString().replaceAll("[^A-Za-z0-9]", "_") + "_" + line;
        }
    }

    /** Every Markdown file of the project, README.md first; build output and hidden directories left out. */
    static List<Path> docs() throws IOException {
        List<Path> files = new ArrayList<>();
        files.add(ROOT.resolve("README.md"));
        try (Stream<Path> all = Files.walk(ROOT)) {
            all.filter(p -> p.getFileName().toString().endsWith(".md") && Files.isRegularFile(p))
                    .filter(p -> {
                        for (Path part : ROOT.relativize(p)) {
                            String name = part.toString();
                            if (name.equals("target") || name.equals("node_modules") || name.startsWith(".")) {
                                return false;
                            }
                        }
                        return true;
                    })
                    .filter(p -> !p.equals(ROOT.resolve("README.md")))
                    .sorted()
                    .forEach(files::add);
        }
        return files;
    }

    static List<Block> blocks(String lang) throws IOException {
        List<Block> all = new ArrayList<>();
        for (Path f : docs()) {
            String text = Files.readString(f, StandardCharsets.UTF_8);
            Matcher m = FENCE.matcher(text);
            while (m.find()) {
                String open = m.group(1);
                int fence = m.start();
                int start = m.end() + 1;
                if (!m.find()) {
                    throw new AssertionError(f + ": unclosed code block");
                }
                String body = start > m.start() ? "" : text.substring(start, m.start());
                int line = (int) text.substring(0, start).chars().filter(c -> c == '\n').count();
                String before = text.substring(0, fence).stripTrailing();
                String g = "";
                if (before.endsWith("-->")) {
                    String comment = before.substring(before.lastIndexOf("<!--") + 4, before.length() - 3).strip();
                    if (comment.startsWith("given:")) {
                        g = comment.substring("given:".length());
                    } else if (comment.startsWith(COPY_OF) || comment.startsWith(APPLICATION_PROPERTIES)) {
                        g = comment;
                    }
                }
                if (open.equals(lang)) {
                    all.add(new Block(f, line, open, body, g.strip()));
                }
            }
        }
        return all;
    }

    @Test
    void docs_areFound() throws IOException {
        assertThat(docs()).contains(ROOT.resolve("README.md"), ROOT.resolve("relay-standalone/DEPLOY.md"), ROOT.resolve("inbox/README.md"),
                ROOT.resolve("docs/getting-started.md"), ROOT.resolve("docs/guarantees.md"));
        assertThat(blocks("properties")).hasSizeGreaterThanOrEqualTo(2);
        assertThat(blocks("java")).hasSizeGreaterThanOrEqualTo(10);
    }

    @TestFactory
    Stream<DynamicTest> propertiesBlock_loadsWithoutTrailingComments_andRelayAcceptsIt(@TempDir Path dir) throws IOException {
        return blocks("properties").stream().map(b -> DynamicTest.dynamicTest(b.where(), () -> {
            Properties p = new Properties();
            p.load(new StringReader(b.text()));
            assertThat(p).as(b.where()).isNotEmpty();
            for (String name : p.stringPropertyNames()) {
                assertThat(p.getProperty(name)).as("%s: value of %s (properties files have no trailing comments)", b.where(), name)
                        .doesNotContainPattern("\\s[#!]");
            }
            if (!b.given().equals(APPLICATION_PROPERTIES) && p.stringPropertyNames().stream().anyMatch(k -> k.startsWith("txbox."))) {
                Path file = dir.resolve(b.className() + ".properties");
                Files.writeString(file, b.text(), StandardCharsets.UTF_8);
                RelayConfig config = RelayConfig.load(file, Map.of());
                if (p.stringPropertyNames().stream().anyMatch(k -> k.startsWith("txbox.destination."))) {
                    config.requireDestinations();
                }
                assertThat(RelayConfig.loadForAdmin(file, Map.of()).jdbcUrl()).isEqualTo(p.getProperty("txbox.jdbc.url"));
            }
        }));
    }

    @TestFactory
    Stream<DynamicTest> javaBlock_compiles(@TempDir Path out) throws IOException {
        List<Block> java = blocks("java").stream().filter(b -> !b.given().startsWith(COPY_OF)).toList();
        Map<String, Block> byClass = new LinkedHashMap<>();
        List<JavaFileObject> sources = new ArrayList<>();
        for (Block b : java) {
            byClass.put(b.className(), b);
            sources.add(new Source(b.className(), source(b)));
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, Locale.ROOT, StandardCharsets.UTF_8)) {
            javac.getTask(null, files, diagnostics, List.of("-proc:none", "-classpath", classpath, "-d", out.toString(),
                    "-Xlint:none", "-nowarn"), null, sources).call();
        }
        Map<String, List<String>> errors = diagnostics.getDiagnostics().stream()
                .filter(d -> d.getKind() == Diagnostic.Kind.ERROR && d.getSource() != null)
                .collect(Collectors.groupingBy(d -> d.getSource().getName().replaceAll(".*/|\\.java$", ""),
                        Collectors.mapping(d -> "line " + d.getLineNumber() + " of the wrapped source: "
                                + d.getMessage(Locale.ROOT), Collectors.toList())));
        return byClass.entrySet().stream().map(e -> DynamicTest.dynamicTest(e.getValue().where(), () ->
                assertThat(errors.getOrDefault(e.getKey(), List.of()))
                        .as("%s does not compile; wrapped source:%n%s", e.getValue().where(), numbered(source(e.getValue())))
                        .isEmpty()));
    }

    @TestFactory
    Stream<DynamicTest> javaBlock_importsEveryTxboxTypeItUses() throws IOException {
        Map<String, List<String>> types = txboxTypes();
        assertThat(types).containsKeys("TxboxMigrations", "StepKey", "RabbitPublisher", "TestPostgres");
        return blocks("java").stream().map(b -> DynamicTest.dynamicTest(b.where(), () -> {
            String code = (b.given().startsWith(COPY_OF) ? copyGiven(b) : b.given()) + "\n" + b.text();
            assertThat(missingImports(code, types)).as("%s uses txbox types without importing them (in the block, or in its given"
                    + " comment); add", b.where()).isEmpty();
        }));
    }

    /** The public txbox types by simple name, each with the packages that have one of that name. */
    static Map<String, List<String>> txboxTypes() throws IOException {
        Map<String, List<String>> types = new LinkedHashMap<>();
        try (Stream<Path> all = Files.walk(ROOT)) {
            for (Path f : all.filter(p -> p.toString().endsWith(".java") && p.toString().contains("/src/main/java/io/txbox/")
                    && !p.toString().contains("/internal/") && !p.toString().contains("/target/")).toList()) {
                String src = Files.readString(f, StandardCharsets.UTF_8);
                Matcher pkg = PACKAGE.matcher(src);
                Matcher type = PUBLIC_TYPE.matcher(src);
                if (pkg.find() && type.find()) {
                    types.computeIfAbsent(type.group(1), k -> new ArrayList<>()).add(pkg.group(1));
                }
            }
        }
        return types;
    }

    /** The imports {@code code} lacks for the txbox types it names, as {@code import} lines. */
    static List<String> missingImports(String code, Map<String, List<String>> types) {
        String stripped = code.replaceAll("\"(?:\\\\.|[^\"\\\\])*\"", "\"\"").replaceAll("//[^\\n]*", "")
                .replaceAll("(?s)/\\*.*?\\*/", "");
        Matcher imported = IMPORT.matcher(stripped);
        List<String> imports = new ArrayList<>();
        while (imported.find()) {
            imports.add(imported.group().replaceAll("import\\s+(static\\s+)?|\\s*;", ""));
        }
        String body = IMPORT.matcher(stripped).replaceAll("");
        List<String> missing = new ArrayList<>();
        Matcher word = Pattern.compile("(?<![\\w.@])([A-Z]\\w*)\\b").matcher(body);
        while (word.find()) {
            String name = word.group(1);
            List<String> packages = types.get(name);
            if (packages == null || Pattern.compile("(?:class|interface|record|enum)\\s+" + name + "\\b").matcher(body).find()) {
                continue;
            }
            boolean found = packages.stream().anyMatch(p -> imports.contains(p + "." + name) || imports.contains(p + ".*"));
            String line = "import " + packages.get(0) + "." + name + ";";
            if (!found && !missing.contains(line)) {
                missing.add(line);
            }
        }
        return missing;
    }

    @TestFactory
    Stream<DynamicTest> javaBlockCopy_matchesItsSourceFile() throws IOException {
        return blocks("java").stream().filter(b -> b.given().startsWith(COPY_OF)).map(b -> DynamicTest.dynamicTest(b.where(),
                () -> {
                    Path source = copySource(b);
                    assertThat(source).as("%s names its source", b.where()).isRegularFile();
                    String file = Files.readString(source, StandardCharsets.UTF_8);
                    assertThat(file).as("%s is a verbatim part of %s", b.where(), ROOT.relativize(source)).contains(b.text());
                    Matcher pkg = PACKAGE.matcher(file);
                    String own = pkg.find() ? pkg.group(1) : "";
                    Matcher imported = IMPORT.matcher(copyGiven(b));
                    while (imported.find()) {
                        String name = imported.group().replaceAll("import\\s+(static\\s+)?|\\s*;", "");
                        assertThat(file.contains(imported.group()) || name.substring(0, name.lastIndexOf('.')).equals(own))
                                .as("%s: %s is an import of %s or names a type of its package", b.where(), imported.group(),
                                        ROOT.relativize(source))
                                .isTrue();
                    }
                }));
    }

    /** The source file a {@code copy of:} block names. */
    static Path copySource(Block b) {
        String rest = b.given().substring(COPY_OF.length());
        int given = rest.indexOf("given:");
        return ROOT.resolve((given < 0 ? rest : rest.substring(0, given)).replaceAll("[;\\s]+$", "").strip());
    }

    /** The imports a {@code copy of:} block declares after its path, or "". */
    static String copyGiven(Block b) {
        int given = b.given().indexOf("given:");
        return given < 0 ? "" : b.given().substring(given + "given:".length());
    }

    /** The block wrapped by the convention in the class comment. */
    static String source(Block b) {
        StringBuilder imports = new StringBuilder();
        Matcher m = IMPORT.matcher(b.given());
        while (m.find()) {
            imports.append(m.group()).append('\n');
        }
        String members = "    " + IMPORT.matcher(b.given()).replaceAll("").strip() + "\n";
        List<String> lines = new ArrayList<>(List.of(elide(b.text()).split("\n", -1)));
        while (!lines.isEmpty() && (lines.get(0).strip().startsWith("import ") || lines.get(0).isBlank())) {
            imports.append(lines.remove(0).strip()).append('\n');
        }
        StringBuilder lifted = new StringBuilder();
        while (!lines.isEmpty() && (lines.get(0).strip().startsWith("@") || lines.get(0).strip().startsWith("static "))) {
            lifted.append("    ").append(lines.remove(0)).append('\n');
        }
        StringBuilder src = new StringBuilder();
        for (String p : IMPORTS) {
            src.append("import ").append(p).append(".*;\n");
        }
        src.append("import static java.nio.charset.StandardCharsets.UTF_8;\n");
        src.append(imports);
        src.append("@SuppressWarnings(\"all\")\nabstract class ").append(b.className()).append(" {\n");
        src.append(members).append(lifted);
        src.append("    void snippet() throws Exception {\n");
        for (String l : lines) {
            src.append("        ").append(l).append('\n');
        }
        src.append("    }\n}\n");
        return src.toString();
    }

    static String elide(String code) {
        return code.replaceAll("\\{\\s*\\.\\.\\.\\s*}", "{ }").replace("(...)", "()").replaceAll("(?m)^\\s*\\.\\.\\.\\s*$", "");
    }

    static String numbered(String source) {
        String[] lines = source.split("\n");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < lines.length; i++) {
            sb.append(String.format("%3d  %s%n", i + 1, lines[i]));
        }
        return sb.toString();
    }

    /** An in-memory source file. */
    static final class Source extends SimpleJavaFileObject {
        private final String code;

        Source(String className, String code) {
            super(URI.create("string:///" + className + Kind.SOURCE.extension), Kind.SOURCE);
            this.code = code;
        }

        @Override
        public CharSequence getCharContent(boolean ignoreEncodingErrors) {
            return code;
        }
    }
}
