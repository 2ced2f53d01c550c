package io.txbox.faults;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.testkit.TestPostgres;
import java.time.Duration;

/** Connection pools for fault tests: named, so a test can find and terminate their backends. */
final class Pools {
    private Pools() {}

    static HikariDataSource pool(String jdbcUrl, String user, String applicationName, int size) {
        return pool(jdbcUrl, user, applicationName, size, Duration.ofSeconds(10), null);
    }

    static HikariDataSource pool(TestPostgres pg, String applicationName, int size) {
        return pool(pg.jdbcUrl(), pg.user(), applicationName, size);
    }

    static HikariDataSource pool(String jdbcUrl, String user, String applicationName, int size, Duration connectionTimeout,
            String initSql) {
        HikariConfig hc = new HikariConfig();
        hc.setPoolName(applicationName);
        hc.setJdbcUrl(jdbcUrl);
        hc.setUsername(user);
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
