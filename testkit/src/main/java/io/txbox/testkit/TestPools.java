package io.txbox.testkit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.Map;

/** The HikariCP pool every per-class database extension hands out: one shape, one place. */
final class TestPools {
  private TestPools() {}

  /**
   * A pool named {@code txbox-test-<name>} on {@code url}, opening connections on demand up to
   * {@code poolSize}, waiting at most 10 s for one.
   */
  static HikariDataSource create(String name, String url, String user, String password, int poolSize,
      Map<String, String> driverProperties) {
    HikariConfig config = new HikariConfig();
    config.setPoolName("txbox-test-" + name);
    config.setJdbcUrl(url);
    config.setUsername(user);
    if (!password.isEmpty()) {
      config.setPassword(password);
    }
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(1);
    config.setConnectionTimeout(Duration.ofSeconds(10).toMillis());
    driverProperties.forEach(config::addDataSourceProperty);
    return new HikariDataSource(config);
  }
}
