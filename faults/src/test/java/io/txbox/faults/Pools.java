package io.txbox.faults;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.testkit.TestDatabase;
import java.time.Duration;

/** Connection pools for fault tests: named, so a test can find and terminate their backends. */
final class Pools {
    private Pools() {}

    static HikariDataSource pool(String jdbcUrl, String user, String applicationName, int size) {
        return pool(jdbcUrl, user, null, applicationName, size, Duration.ofSeconds(10), null);
    }

    static HikariDataSource pool(TestDatabase db, String applicationName, int size) {
        return pool(db, applicationName, size, Duration.ofSeconds(10), null);
    }

    /** A pool on {@code db}'s schema whose connections each run {@code initSql} (if not null) first. */
    static HikariDataSource pool(TestDatabase db, String applicationName, int size, Duration connectionTimeout,
            String initSql) {
        return pool(db.jdbcUrl(), db.user(), db.password(), applicationName, size, connectionTimeout, initSql);
    }

    static HikariDataSource pool(String jdbcUrl, String user, String password, String applicationName, int size,
            Duration connectionTimeout, String initSql) {
        HikariConfig hc = new HikariConfig();
        hc.setPoolName(applicationName);
        hc.setJdbcUrl(jdbcUrl);
        hc.setUsername(user);
        if (password != null && !password.isEmpty()) {
            hc.setPassword(password);
        }
        hc.setMaximumPoolSize(size);
        hc.setMinimumIdle(0);
        hc.setConnectionTimeout(connectionTimeout.toMillis());
        if (initSql != null) {
            hc.setConnectionInitSql(initSql);
        }
        hc.addDataSourceProperty("ApplicationName", applicationName);
        return new HikariDataSource(hc);
    }
}
