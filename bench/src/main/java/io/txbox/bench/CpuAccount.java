package io.txbox.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * CPU seconds a phase cost on this machine, per process: this JVM (the relay or the bare client),
 * its child processes (the private Kafka broker) and the PostgreSQL backends of one pool (each
 * session is a process there; on MariaDB they are threads of the server, so none are counted).
 * Read from the operating system before and after the phase; a broker given with {@code --kafka}
 * is not a child process and counts 0.
 */
final class CpuAccount {
    private final List<Long> backends;
    private final double jvm;
    private final double children;
    private final double db;

    private CpuAccount(List<Long> backends) {
        this.backends = backends;
        this.jvm = seconds(ProcessHandle.current());
        this.children = ProcessHandle.current().descendants().mapToDouble(CpuAccount::seconds).sum();
        this.db = backends.stream().mapToDouble(pid -> ProcessHandle.of(pid).map(CpuAccount::seconds).orElse(0.0)).sum();
    }

    /** Starts counting; {@code pool} names the pool whose database sessions count, or null for none. */
    static CpuAccount start(BenchEnv env, String pool) throws SQLException {
        List<Long> pids = new ArrayList<>();
        if (pool != null && !env.mariadb) {
            try (Connection c = env.adminConnection();
                    PreparedStatement ps = c.prepareStatement("SELECT pid FROM pg_stat_activity WHERE application_name = ?")) {
                ps.setString(1, env.applicationName(pool));
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        pids.add(rs.getLong(1));
                    }
                }
            }
        }
        return new CpuAccount(pids);
    }

    /** CPU seconds since {@link #start}: this JVM, its child processes, the pool's database sessions. */
    double[] since() {
        CpuAccount now = new CpuAccount(backends);
        return new double[] {now.jvm - jvm, now.children - children, now.db - db};
    }

    private static double seconds(ProcessHandle p) {
        return p.info().totalCpuDuration().map(d -> d.toNanos() / 1e9).orElse(0.0);
    }
}
