package io.txbox.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a run prints: a readable table, then one last line {@code BENCH {json}} with the
 * scenario, its parameters, its figures and the facts of the JVM and the machine.
 */
final class Report {
    private static final ObjectMapper JSON = new ObjectMapper().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);

    final String scenario;
    final Instant startedAt = Instant.now();
    private final Map<String, Object> parameters = new LinkedHashMap<>();
    private final Map<String, Object> figures = new LinkedHashMap<>();
    private final Map<String, Object> targets = new LinkedHashMap<>();
    private final List<String[]> rows = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private final String loadAtStart = loadAverage();
    private String database;
    private Path picture;

    Report(String scenario) {
        this.scenario = scenario;
    }

    void parameters(Map<String, String> p) {
        p.forEach((k, v) -> parameters.put(k, number(v)));
    }

    /** A figure for the JSON; also a row of the table. */
    Report figure(String name, Object value, String unit) {
        figures.put(name, value);
        rows.add(new String[] {name, format(value), unit == null ? "" : unit});
        return this;
    }

    /** A figure for the JSON only (series, breakdowns). */
    Report detail(String name, Object value) {
        figures.put(name, value);
        return this;
    }

    /** The target for a figure, e.g. "ratio &gt;= 0.90"; printed with a verdict. */
    Report target(String figure, String op, double bound) {
        Object v = figures.get(figure);
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("figure", figure);
        t.put("op", op);
        t.put("bound", bound);
        if (v instanceof Number n) {
            double d = n.doubleValue();
            boolean met = switch (op) {
                case ">=" -> d >= bound;
                case "<=" -> d <= bound;
                case "==" -> d == bound;
                default -> throw new IllegalArgumentException(op);
            };
            t.put("met", met);
        }
        targets.put(figure, t);
        return this;
    }

    void note(String text) {
        notes.add(text);
    }

    /** The database's product and version, as its driver reports them. */
    void databaseVersion(Connection c) {
        try {
            java.sql.DatabaseMetaData m = c.getMetaData();
            database = m.getDatabaseProductName() + " " + m.getDatabaseProductVersion();
        } catch (SQLException e) {
            database = "unknown: " + e.getMessage();
        }
    }

    void picture(Path p) {
        this.picture = p;
    }

    void print(PrintStream out) {
        out.println();
        out.println("== " + scenario + " ==");
        if (!parameters.isEmpty()) {
            StringBuilder sb = new StringBuilder("parameters:");
            parameters.forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
            out.println(sb);
        }
        int w0 = "figure".length();
        int w1 = "value".length();
        for (String[] r : rows) {
            w0 = Math.max(w0, r[0].length());
            w1 = Math.max(w1, r[1].length());
        }
        String fmt = "| %-" + w0 + "s | %" + w1 + "s | %-6s |%s%n";
        out.printf(fmt, "figure", "value", "unit", " target");
        out.println("|" + "-".repeat(w0 + 2) + "|" + "-".repeat(w1 + 2) + "|--------|--------");
        for (String[] r : rows) {
            String verdict = "";
            @SuppressWarnings("unchecked")
            Map<String, Object> t = (Map<String, Object>) targets.get(r[0]);
            if (t != null) {
                verdict = " " + t.get("op") + " " + format(t.get("bound"))
                        + (t.containsKey("met") ? ((Boolean) t.get("met") ? "  met" : "  NOT met") : "");
            }
            out.printf(fmt, r[0], r[1], r[2], verdict);
        }
        for (String n : notes) {
            out.println("note: " + n);
        }
        out.println("load average: start " + loadAtStart + ", end " + loadAverage());
        if (picture != null) {
            out.println("picture: " + picture);
        }
        out.println("BENCH " + json());
        out.flush();
    }

    String json() {
        Map<String, Object> all = new LinkedHashMap<>();
        all.put("scenario", scenario);
        all.put("parameters", parameters);
        all.put("figures", figures);
        all.put("targets", targets);
        if (!notes.isEmpty()) {
            all.put("notes", notes);
        }
        all.put("jvm", jvm());
        all.put("machine", machine());
        if (database != null) {
            all.put("database", database);
        }
        all.put("git", System.getProperty("txbox.bench.git", "unknown"));
        all.put("picture", picture == null ? null : picture.toString());
        all.put("started_at", DateTimeFormatter.ISO_INSTANT.format(startedAt));
        all.put("timestamp", DateTimeFormatter.ISO_INSTANT.format(Instant.now()));
        try {
            return JSON.writeValueAsString(all);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private Map<String, Object> jvm() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("version", System.getProperty("java.runtime.version", System.getProperty("java.version")));
        m.put("vendor", System.getProperty("java.vendor"));
        m.put("vm", System.getProperty("java.vm.name"));
        m.put("max_heap_mb", Runtime.getRuntime().maxMemory() / (1024 * 1024));
        m.put("gc", gcNames());
        m.put("args", ManagementFactory.getRuntimeMXBean().getInputArguments());
        return m;
    }

    private static List<String> gcNames() {
        List<String> names = new ArrayList<>();
        ManagementFactory.getGarbageCollectorMXBeans().forEach(b -> names.add(b.getName()));
        return names;
    }

    private Map<String, Object> machine() {
        Map<String, Object> m = new LinkedHashMap<>();
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        m.put("cores", Runtime.getRuntime().availableProcessors());
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            m.put("memory_mb", sun.getTotalMemorySize() / (1024 * 1024));
        }
        m.put("os", os.getName() + " " + os.getVersion() + " " + os.getArch());
        m.put("cpu", cpuModel());
        m.put("load_average_start", loadAtStart);
        m.put("load_average_end", loadAverage());
        return m;
    }

    private static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return "unknown";
    }

    /** The 1, 5 and 15 minute load averages, from /proc/loadavg where there is one. */
    static String loadAverage() {
        try {
            String[] p = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return p[0] + " " + p[1] + " " + p[2];
        } catch (IOException | RuntimeException e) {
            double d = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
            return d < 0 ? "unknown" : String.format("%.2f", d);
        }
    }

    static String timestampForFile(Instant i) {
        return DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").withZone(ZoneOffset.UTC).format(i);
    }

    static String format(Object v) {
        if (v instanceof Double d && d == Math.rint(d) && Math.abs(d) < 1e15) {
            return String.format("%,d", d.longValue());
        }
        if (v instanceof Double d) {
            double a = Math.abs(d);
            if (a >= 1000) {
                return String.format("%,.0f", d);
            }
            if (a >= 10) {
                return String.format("%.1f", d);
            }
            return String.format("%.3f", d);
        }
        if (v instanceof Long || v instanceof Integer) {
            return String.format("%,d", ((Number) v).longValue());
        }
        return String.valueOf(v);
    }

    private static Object number(String v) {
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            try {
                return Double.parseDouble(v);
            } catch (NumberFormatException e2) {
                return v;
            }
        }
    }

    /** Rounds for the JSON: figures are measurements, not 17 digits. */
    static double round(double v, int digits) {
        double f = Math.pow(10, digits);
        return Math.round(v * f) / f;
    }
}
