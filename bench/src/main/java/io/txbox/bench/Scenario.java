package io.txbox.bench;

import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;

/** One benchmark. Reads its options in {@link #configure}, measures in {@link #run}. */
abstract class Scenario {
    protected Options opts;
    protected BenchEnv env;
    protected Report report;
    protected Html html;

    /** Reads the options this scenario understands, with their defaults. */
    abstract void configure(Options opts);

    /** Runs against {@link #env} and fills {@link #report} and {@link #html}. */
    abstract void run() throws Exception;

    /** A broken guarantee (lost or doubled messages): the run exits non-zero. */
    boolean failedCorrectness() {
        return false;
    }

    /** Why the scenario measures PostgreSQL only, which makes {@code --db mariadb} a usage error; null if it runs on both. */
    String postgresOnly() {
        return null;
    }

    void bind(Options o, BenchEnv e, Report r, Html h) {
        this.opts = o;
        this.env = e;
        this.report = r;
        this.html = h;
    }

    static byte[] payload(int size) {
        byte[] b = new byte[size];
        // printable and incompressible enough: what a JSON body costs on the wire
        ThreadLocalRandom r = ThreadLocalRandom.current();
        for (int i = 0; i < size; i++) {
            b[i] = (byte) ('a' + r.nextInt(26));
        }
        return b;
    }

    static void log(String fmt, Object... args) {
        System.out.printf("[%s] " + fmt + "%n", prepend(java.time.LocalTime.now().withNano(0), args));
        System.out.flush();
    }

    private static Object[] prepend(Object first, Object[] rest) {
        Object[] all = new Object[rest.length + 1];
        all[0] = first;
        System.arraycopy(rest, 0, all, 1, rest.length);
        return all;
    }

    static Path resultsDir() {
        String p = System.getProperty("txbox.bench.results");
        return Path.of(p != null ? p : "bench/results");
    }
}
