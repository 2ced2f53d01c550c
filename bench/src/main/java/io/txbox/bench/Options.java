package io.txbox.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The options of one run, as its scenario reads them: each scenario reads the options it knows
 * with its own default and a description. The same reads, made on {@link #declaring} options,
 * list what a scenario understands, which is how {@link Main} builds each scenario's picocli
 * command and {@code --help}: the name, default and meaning of an option live only at the line
 * that reads it. An option no scenario reads is an error, so a typo never silently runs with a
 * default.
 */
final class Options {
    /** One option a scenario reads: a flag takes no value. */
    record Declared(String name, boolean flag, String dflt, String description) {}

    final String scenario;
    private final Map<String, String> values = new LinkedHashMap<>();
    private final Map<String, String> used = new LinkedHashMap<>();
    private final Map<String, Declared> declared = new LinkedHashMap<>();

    private Options(String scenario) {
        this.scenario = scenario;
    }

    /** The values given on the command line ({@code name} without the dashes; a flag's value is "true"). */
    static Options of(String scenario, Map<String, String> given) {
        Options o = new Options(scenario);
        o.values.putAll(given);
        return o;
    }

    /** No values: the reads record what the scenario understands (see {@link #declared()}). */
    static Options declaring(String scenario) {
        return new Options(scenario);
    }

    /** The options read so far, in the order they were read. */
    List<Declared> declared() {
        return List.copyOf(declared.values());
    }

    private void declare(String name, boolean flag, Object dflt, String description) {
        declared.putIfAbsent(name, new Declared(name, flag, String.valueOf(dflt), description));
    }

    String string(String name, String dflt) {
        return string(name, dflt, "");
    }

    String string(String name, String dflt, String description) {
        declare(name, false, dflt, description);
        String v = values.getOrDefault(name, dflt);
        used.put(name, v);
        return v;
    }

    /** Absent options read as null and are not echoed into the parameters. */
    String stringOrNull(String name, String description) {
        declare(name, false, "none", description);
        String v = values.get(name);
        if (v != null) {
            used.put(name, v);
        }
        return v;
    }

    long longValue(String name, long dflt) {
        return longValue(name, dflt, "");
    }

    long longValue(String name, long dflt, String description) {
        return number(name, dflt, description, Options::parseCount, "a whole number");
    }

    int intValue(String name, int dflt) {
        return intValue(name, dflt, "");
    }

    int intValue(String name, int dflt, String description) {
        long v = longValue(name, dflt, description);
        if (v > Integer.MAX_VALUE || v < Integer.MIN_VALUE) {
            throw new UsageException("--" + name + " is out of range: " + v);
        }
        return (int) v;
    }

    double doubleValue(String name, double dflt) {
        return doubleValue(name, dflt, "");
    }

    double doubleValue(String name, double dflt, String description) {
        return number(name, dflt, description, Double::parseDouble, "a number");
    }

    /** Declares a numeric option, parses its value (or takes {@code dflt}) and echoes it into the parameters. */
    private <T> T number(String name, T dflt, String description, Function<String, T> parse, String kind) {
        declare(name, false, dflt, description);
        String v = values.get(name);
        T result;
        try {
            result = v == null ? dflt : parse.apply(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " must be " + kind + ", but was '" + v + "'");
        }
        used.put(name, result.toString());
        return result;
    }

    boolean flag(String name) {
        return flag(name, "");
    }

    boolean flag(String name, String description) {
        declare(name, true, false, description);
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
