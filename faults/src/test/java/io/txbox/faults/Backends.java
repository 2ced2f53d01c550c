package io.txbox.faults;

import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/** Finds PostgreSQL backends by application name and what they run, and terminates them. */
final class Backends {
    private static final Pattern URL = Pattern.compile("jdbc:postgresql://([^/:]+)(?::(\\d+))?/(.*)");

    private Backends() {}

    /**
     * Waits until a backend of {@code applicationName} is actively running a statement that
     * contains {@code queryPart}, then terminates it with {@code pg_terminate_backend}.
     */
    static int terminateWhen(DataSource admin, String applicationName, String queryPart, Duration timeout) {
        int[] pid = {0};
        await().atMost(timeout).pollInterval(Duration.ofMillis(5)).until(() -> {
            try (Connection c = admin.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = ? AND state = 'active'"
                            + " AND position(? in query) > 0")) {
                ps.setString(1, applicationName);
                ps.setString(2, queryPart);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        pid[0] = rs.getInt(1);
                        return true;
                    }
                }
            }
            return false;
        });
        try (Connection c = admin.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
            ps.setInt(1, pid[0]);
            ps.execute();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return pid[0];
    }

    /** {@code jdbcUrl} pointed at 127.0.0.1:{@code port} instead of its own host and port. */
    static String viaPort(String jdbcUrl, int port) {
        Matcher m = URL.matcher(jdbcUrl);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a jdbc:postgresql://host[:port]/... URL: " + jdbcUrl);
        }
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + m.group(3);
    }

    static String host(String jdbcUrl) {
        Matcher m = URL.matcher(jdbcUrl);
        if (!m.matches()) {
            throw new IllegalArgumentException(jdbcUrl);
        }
        return m.group(1);
    }

    static int port(String jdbcUrl) {
        Matcher m = URL.matcher(jdbcUrl);
        if (!m.matches()) {
            throw new IllegalArgumentException(jdbcUrl);
        }
        return m.group(2) == null ? 5432 : Integer.parseInt(m.group(2));
    }
}
