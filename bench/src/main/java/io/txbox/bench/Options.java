package io.txbox.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The command line of one run: {@code SCENARIO [--name value]...}. Each scenario reads the
 * options it knows with its own default; an option no scenario reads is an error, so a typo
 * never silently runs with a default.
 */
final class Options {
    private static final Set<String> FLAGS = Set.of("strict-fencing", "trace-sql", "keep-schema", "no-html", "quiet");

    final String scenario;
    private final Map<String, String> values = new LinkedHashMap<>();
    private final Map<String, String> used = new LinkedHashMap<>();

    private Options(String scenario) {
        this.scenario = scenario;
    }

    static Options parse(List<String> args) {
        if (args.isEmpty() || args.get(0).startsWith("-")) {
            throw new UsageException("the first argument must be a scenario");
        }
        Options o = new Options(args.get(0));
        for (int i = 1; i < args.size(); i++) {
            String a = args.get(i);
            if (!a.startsWith("--") || a.length() < 3) {
                throw new UsageException("expected --option, got '" + a + "'");
            }
            String name = a.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq > 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (FLAGS.contains(name)) {
                value = "true";
            } else if (i + 1 < args.size()) {
                value = args.get(++i);
            } else {
                throw new UsageException("--" + name + " needs a value");
            }
            o.values.put(name, value);
        }
        return o;
    }

    String string(String name, String dflt) {
        String v = values.getOrDefault(name, dflt);
        used.put(name, v);
        return v;
    }

    /** Absent options read as null and are not echoed into the parameters. */
    String stringOrNull(String name) {
        String v = values.get(name);
        if (v != null) {
            used.put(name, v);
        }
        return v;
    }

    long longValue(String name, long dflt) {
        String v = values.get(name);
        long result;
        try {
            result = v == null ? dflt : parseCount(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " must be a whole number, but was '" + v + "'");
        }
        used.put(name, Long.toString(result));
        return result;
    }

    int intValue(String name, int dflt) {
        long v = longValue(name, dflt);
        if (v > Integer.MAX_VALUE || v < Integer.MIN_VALUE) {
            throw new UsageException("--" + name + " is out of range: " + v);
        }
        return (int) v;
    }

    double doubleValue(String name, double dflt) {
        String v = values.get(name);
        double result;
        try {
            result = v == null ? dflt : Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " must be a number, but was '" + v + "'");
        }
        used.put(name, Double.toString(result));
        return result;
    }

    boolean flag(String name) {
        boolean b = Boolean.parseBoolean(values.getOrDefault(name, "false"));
        if (b) {
            used.put(name, "true");
        }
        return b;
    }

    /** The options as the scenario read them, defaults included: the run's parameters. */
    Map<String, String> parameters() {
        return used;
    }

    /** Fails on options nobody asked for. Call once the scenario has read its options. */
    void checkAllUsed() {
        for (String name : values.keySet()) {
            if (!used.containsKey(name)) {
                throw new UsageException("unknown option --" + name + " for scenario " + scenario);
            }
        }
    }

    /** 200000, 200_000, 200k, 1m. */
    private static long parseCount(String v) {
        String s = v.replace("_", "").replace(",", "").trim().toLowerCase();
        long mult = 1;
        if (s.endsWith("k")) {
            mult = 1_000;
            s = s.substring(0, s.length() - 1);
        } else if (s.endsWith("m")) {
            mult = 1_000_000;
            s = s.substring(0, s.length() - 1);
        }
        return Long.parseLong(s) * mult;
    }

    static final class UsageException extends RuntimeException {
        UsageException(String message) {
            super(message);
        }
    }
}
