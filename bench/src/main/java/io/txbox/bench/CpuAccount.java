package io.txbox.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * CPU seconds a phase cost on this machine, per process: the JVMs under test (this one, the
 * relay or the bare client, or the relay processes of {@code scale-out}), this JVM's other child
 * processes (the private Kafka broker) and the PostgreSQL backends of some sessions (each session
 * is a process there; on MariaDB they are threads of the server, so none are counted). Read from
 * the operating system before and after the phase; a broker given with {@code --kafka} is not a
 * child process and counts 0. The JVMs' share is also split by thread (Linux only, from {@code
 * /proc/<pid>/task}): their JIT compiler threads and their GC threads, so a phase that pays for
 * compiling code another phase then runs compiled shows as such. A local RabbitMQ broker (an
 * Erlang VM of its own, not a child) counts with the brokers where a phase names it ({@link
 * #localRabbit}).
 */
final class CpuAccount {
    private final List<ProcessHandle> jvms;
    private final List<Long> backends;
    private final List<ProcessHandle> brokers;
    private final double jvm;
    private final double children;
    private final double db;
    /** CPU seconds of the JVMs' JIT compiler and GC threads, by process and thread id. */
    private final Map<String, double[]> jitGc;

    private CpuAccount(List<ProcessHandle> jvms, List<Long> backends, List<ProcessHandle> brokers) {
        this.jvms = jvms;
        this.backends = backends;
        this.brokers = brokers;
        this.jitGc = jitGcThreads(jvms);
        this.jvm = jvms.stream().mapToDouble(CpuAccount::seconds).sum();
        Set<Long> counted = jvms.stream().map(ProcessHandle::pid).collect(Collectors.toSet());
        this.children = ProcessHandle.current().descendants().filter(p -> !counted.contains(p.pid()))
                .mapToDouble(CpuAccount::seconds).sum() + brokers.stream().mapToDouble(CpuAccount::seconds).sum();
        this.db = backends.stream().mapToDouble(pid -> ProcessHandle.of(pid).map(CpuAccount::seconds).orElse(0.0)).sum();
    }

    /** Starts counting this JVM; {@code pool} names the pool whose database sessions count, or null for none. */
    static CpuAccount start(BenchEnv env, String pool) throws SQLException {
        return start(env, pool, List.of());
    }

    /** {@link #start(BenchEnv, String)}, counting {@code brokers} (other processes) with the broker. */
    static CpuAccount start(BenchEnv env, String pool, List<ProcessHandle> brokers) throws SQLException {
        CpuAccount a = start(env, List.of(ProcessHandle.current()), pool == null ? List.of() : List.of(env.applicationName(pool)));
        return new CpuAccount(a.jvms, a.backends, List.copyOf(brokers));
    }

    /**
     * The RabbitMQ broker on this machine (the Erlang VM that boots {@code rabbit}), or none when
     * it runs elsewhere or cannot be seen.
     */
    static List<ProcessHandle> localRabbit() {
        return local(line -> line.contains("beam") && line.contains(" rabbit "));
    }

    /**
     * The MariaDB server on this machine ({@code mariadbd} or {@code mysqld}), whose sessions are
     * its threads, or none when it runs elsewhere or cannot be seen.
     */
    static List<Long> localMariaDb() {
        return local(line -> {
            String program = Path.of(line.split(" ", 2)[0]).getFileName().toString();
            return program.equals("mariadbd") || program.equals("mysqld");
        }).stream().map(ProcessHandle::pid).toList();
    }

    private static List<ProcessHandle> local(java.util.function.Predicate<String> commandLine) {
        return ProcessHandle.allProcesses().filter(p -> {
            try {
                // the whole command line (ProcessHandle.Info may leave a long one out)
                String line = Files.readString(Path.of("/proc", Long.toString(p.pid()), "cmdline")).replace('\0', ' ');
                return !line.isBlank() && commandLine.test(line);
            } catch (IOException | RuntimeException e) {
                return false; // off Linux, or the process ended
            }
        }).toList();
    }

    /** CPU seconds these processes used since they started (0 for one that ended). */
    static double lifetimeSeconds(List<Long> pids) {
        return pids.stream().mapToDouble(pid -> ProcessHandle.of(pid).map(CpuAccount::seconds).orElse(0.0)).sum();
    }

    /**
     * Starts counting the given JVMs (child processes of this one, or this one) and the database
     * sessions whose application name is one of {@code applicationNames}.
     */
    static CpuAccount start(BenchEnv env, List<ProcessHandle> jvms, List<String> applicationNames) throws SQLException {
        return start(env, jvms, applicationNames, List.of());
    }

    /** {@link #start(BenchEnv, List, List)}, counting the database processes {@code backends} as well. */
    static CpuAccount start(BenchEnv env, List<ProcessHandle> jvms, List<String> applicationNames, List<Long> backends)
            throws SQLException {
        List<Long> pids = new ArrayList<>(backends);
        if (!applicationNames.isEmpty() && !env.mariadb) {
            try (Connection c = env.adminConnection();
                    PreparedStatement ps = c.prepareStatement("SELECT pid FROM pg_stat_activity WHERE application_name = ANY(?)")) {
                ps.setArray(1, c.createArrayOf("text", applicationNames.toArray()));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        pids.add(rs.getLong(1));
                    }
                }
            }
        }
        return new CpuAccount(List.copyOf(jvms), pids, List.of());
    }

    /**
     * CPU seconds since {@link #start}: the JVMs counted, this JVM's other child processes, the
     * database sessions, and of the JVMs', their JIT compiler threads and their GC threads (a
     * thread that ended meanwhile, as idle compiler threads do, counts 0; so does a JVM that
     * ended).
     */
    double[] since() {
        CpuAccount now = new CpuAccount(jvms, backends, brokers);
        double jit = 0;
        double gc = 0;
        for (Map.Entry<String, double[]> e : now.jitGc.entrySet()) {
            double[] before = jitGc.getOrDefault(e.getKey(), new double[2]);
            jit += e.getValue()[0] - before[0];
            gc += e.getValue()[1] - before[1];
        }
        return new double[] {now.jvm - jvm, now.children - children, now.db - db, jit, gc};
    }

    /** "pid/tid" to {JIT seconds, GC seconds} for the JVMs' compiler and GC threads; empty off Linux. */
    private static Map<String, double[]> jitGcThreads(List<ProcessHandle> jvms) {
        Map<String, double[]> threads = new HashMap<>();
        for (ProcessHandle p : jvms) {
            try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc", Long.toString(p.pid()), "task"))) {
                for (Path task : tasks) {
                    String stat;
                    try {
                        stat = Files.readString(task.resolve("stat"));
                    } catch (IOException e) {
                        continue; // the thread ended
                    }
                    // pid (comm) state ... utime stime: the 14th and 15th fields, in clock ticks (1/100 s)
                    int open = stat.indexOf('(');
                    int close = stat.lastIndexOf(')');
                    String comm = stat.substring(open + 1, close);
                    boolean jit = comm.startsWith("C1 CompilerThre") || comm.startsWith("C2 CompilerThre");
                    boolean gc = comm.startsWith("GC Thread") || comm.startsWith("G1 ") || comm.equals("VM Thread");
                    if (!jit && !gc) {
                        continue;
                    }
                    String[] f = stat.substring(close + 2).split(" ");
                    double secs = (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;
                    threads.put(p.pid() + "/" + task.getFileName(), jit ? new double[] {secs, 0} : new double[] {0, secs});
                }
            } catch (IOException | RuntimeException e) {
                // off Linux, or the process ended: its threads count 0
            }
        }
        return threads;
    }

    private static double seconds(ProcessHandle p) {
        return p.info().totalCpuDuration().map(d -> d.toNanos() / 1e9).orElse(0.0);
    }
}
