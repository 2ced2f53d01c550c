package io.txbox.relay.standalone;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import io.micrometer.core.instrument.MeterRegistry;
import io.txbox.TxboxException;
import java.net.UnknownHostException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/** Connection pools of the relay process and the admin CLI, from a {@link RelayConfig}. */
public final class Pools {
    private Pools() {}

    /**
     * Opens a HikariCP pool on the configured database and checks that a connection can be
     * made, so a wrong URL or password fails at start with the database's message.
     *
     * @param name pool name in logs and metrics
     * @param maxSize connections at most
     * @param registry where the pool's own meters go ({@code hikaricp_*}), or null for none
     * @throws TxboxException if the database cannot be reached; secrets are masked in the message
     */
    public static HikariDataSource open(RelayConfig config, String name, int maxSize, @Nullable MeterRegistry registry) {
        return open(config, name, maxSize, config.connectionTimeout(), registry);
    }

    /**
     * Like {@link #open(RelayConfig, String, int, MeterRegistry)}, but waits at most {@code
     * connectTimeout} (instead of {@code txbox.jdbc.connection-timeout}) for a connection, at
     * start and afterwards: the admin commands use it to fail within seconds when the database
     * cannot be reached.
     */
    public static HikariDataSource open(RelayConfig config, String name, int maxSize, Duration connectTimeout,
            @Nullable MeterRegistry registry) {
        HikariConfig hc = new HikariConfig();
        hc.setPoolName(name);
        hc.setJdbcUrl(driverUrl(config.jdbcUrl()));
        if (config.jdbcUser() != null) {
            hc.setUsername(config.jdbcUser());
        }
        if (config.jdbcPassword() != null) {
            hc.setPassword(config.jdbcPassword());
        }
        hc.setMaximumPoolSize(maxSize);
        hc.setMinimumIdle(Math.min(2, maxSize));
        hc.setConnectionTimeout(connectTimeout.toMillis());
        // fail at start rather than on the first batch: the operator is watching now
        hc.setInitializationFailTimeout(connectTimeout.toMillis());
        if (registry != null) {
            hc.setMetricRegistry(registry);
        }
        try {
            return new HikariDataSource(hc);
        } catch (HikariPool.PoolInitializationException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new TxboxException("cannot connect to the database at " + Redaction.url(config.jdbcUrl()) + " ("
                    + RelayConfig.JDBC_URL + "): " + Redaction.scrub(causes(cause)), null);
        }
    }

    /**
     * The messages of {@code e} and its causes, each once: a driver's "The connection attempt
     * failed." says why only in its cause ({@code unknown host db-prod}, a refused connection).
     */
    static String causes(Throwable e) {
        StringBuilder text = new StringBuilder();
        for (Throwable t = e; t != null && t != t.getCause(); t = t.getCause()) {
            String message = t instanceof UnknownHostException ? "unknown host " + t.getMessage()
                    : t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
            if (text.indexOf(message) < 0) {
                text.append(text.length() == 0 ? "" : ": ").append(message);
            }
        }
        return text.toString();
    }

    /**
     * {@code url} as the bundled drivers take it: a {@code jdbc:mysql:} URL goes to the MariaDB
     * driver, which serves MySQL only when the URL says {@code permitMysqlScheme}.
     */
    static String driverUrl(String url) {
        if (!url.startsWith("jdbc:mysql:") || url.contains("permitMysqlScheme")) {
            return url;
        }
        return url + (url.contains("?") ? "&" : "?") + "permitMysqlScheme=true";
    }
}
