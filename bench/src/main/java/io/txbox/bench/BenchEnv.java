package io.txbox.bench;

import com.rabbitmq.client.ConnectionFactory;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.PrivateKafkaBroker;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one run talks to: a fresh PostgreSQL schema with the txbox tables (dropped at the end),
 * connection pools on it, a Kafka broker (private, started as in the tests, unless {@code
 * --kafka} names one) and RabbitMQ.
 *
 * <p>Addresses come from the environment: {@code TXBOX_BENCH_JDBC_URL} (else {@code
 * TXBOX_TEST_JDBC_URL}, else {@code jdbc:postgresql://127.0.0.1:5432/test}), {@code
 * TXBOX_BENCH_JDBC_USER}/{@code _PASSWORD} (default postgres, no password), {@code
 * TXBOX_BENCH_RABBIT} ({@code host:port}, default 127.0.0.1:5672, guest/guest).
 */
final class BenchEnv implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(BenchEnv.class);

    final String jdbcUrl;
    final String user;
    final String password;
    final String schema;
    final TxboxTables tables;
    private final String kafkaOption;
    private final boolean keepSchema;
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private PrivateKafkaBroker broker;
    private String bootstrap;
    private boolean schemaCreated;

    BenchEnv(Options opts) {
        this.jdbcUrl = env("TXBOX_BENCH_JDBC_URL", env("TXBOX_TEST_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
        this.user = env("TXBOX_BENCH_JDBC_USER", env("TXBOX_TEST_JDBC_USER", "postgres"));
        this.password = env("TXBOX_BENCH_JDBC_PASSWORD", env("TXBOX_TEST_JDBC_PASSWORD", ""));
        this.kafkaOption = opts.stringOrNull("kafka", "host:port of a Kafka broker to use instead of starting a private one");
        this.keepSchema = opts.flag("keep-schema", "keep the run's PostgreSQL schema instead of dropping it");
        String base = opts.scenario.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "_");
        this.schema = "bench_" + base + "_" + Long.toString(ThreadLocalRandom.current().nextLong(1L << 40, 1L << 41), 36);
        this.tables = TxboxTables.inSchema(schema);
    }

    private static String env(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? dflt : v;
    }

    /** Creates the schema, the txbox tables and the bench's own business table. */
    void createSchema() throws SQLException {
        try (HikariDataSource ds = pool("migrate", 3)) {
            // Flyway creates the schema before it can fail: drop it at the end either way
            schemaCreated = true;
            TxboxMigrations.migrate(ds, tables);
            try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
                // the "business write" of every scenario; deliberately without a unique key on
                // message_key, so a double effect shows up as a second row
                s.execute("CREATE TABLE \"" + schema + "\".business (id bigserial PRIMARY KEY, message_key text NOT NULL,"
                        + " amount bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");
                s.execute("CREATE INDEX ON \"" + schema + "\".business (message_key)");
            }
        }
        log.info("schema {} ready", schema);
    }

    /** A pool on the run's schema; closed with the environment. */
    HikariDataSource pool(String name, int size) {
        return pool(name, size, true);
    }

    /** A pool on the run's schema whose connections start with the given auto-commit mode. */
    HikariDataSource pool(String name, int size, boolean autoCommit) {
        HikariConfig cfg = new HikariConfig();
        cfg.setAutoCommit(autoCommit);
        cfg.setPoolName("bench-" + name);
        cfg.setJdbcUrl(jdbcUrl);
        cfg.setUsername(user);
        cfg.setPassword(password);
        cfg.setMaximumPoolSize(size);
        cfg.setMinimumIdle(size);
        cfg.setSchema(schema);
        cfg.setConnectionTimeout(30_000);
        // the same prepared statements run over and over: let pgjdbc switch to server-side
        // prepared statements after the default 5 executions (the default; stated for clarity)
        cfg.addDataSourceProperty("prepareThreshold", "5");
        cfg.addDataSourceProperty("ApplicationName", applicationName(name));
        HikariDataSource ds = new HikariDataSource(cfg);
        closeables.add(ds);
        return ds;
    }

    /** The application_name of a pool's connections: unique per run, so fault injection hits only this run. */
    String applicationName(String pool) {
        String n = "tb-" + schema + "-" + pool;
        return n.length() > 63 ? n.substring(0, 63) : n;
    }

    /** A plain connection outside every pool, for setup, sampling and fault injection. */
    Connection adminConnection() throws SQLException {
        Connection c = DriverManager.getConnection(jdbcUrl, user, password);
        c.setAutoCommit(true);
        return c;
    }

    String q(String table) {
        return "\"" + schema + "\".\"" + table + "\"";
    }

    String outboxTable() {
        return tables.qualified(tables.outboxTable());
    }

    String inboxTable() {
        return tables.qualified(tables.inboxTable());
    }

    String businessTable() {
        return q("business");
    }

    /** The broker named by --kafka, else a private broker started now (about 10 s). */
    synchronized String kafkaBootstrap() {
        if (bootstrap == null) {
            if (kafkaOption != null) {
                bootstrap = kafkaOption;
            } else {
                privateBroker();
            }
        }
        return bootstrap;
    }

    /** A private broker that this run may kill and restart; ignores --kafka. */
    synchronized PrivateKafkaBroker privateBroker() {
        if (broker == null) {
            long t0 = System.nanoTime();
            broker = KafkaBroker.builder()
                    .brokerProperty("num.partitions", "4")
                    .start();
            bootstrap = broker.bootstrapServers();
            log.info("Kafka broker at {} started in {} ms", bootstrap, (System.nanoTime() - t0) / 1_000_000);
        }
        return broker;
    }

    boolean ownsBroker() {
        return broker != null;
    }

    void createTopic(String topic, int partitions) {
        if (broker != null) {
            broker.createTopic(topic, partitions);
        } else {
            KafkaAdmin.createTopic(kafkaBootstrap(), topic, partitions);
        }
    }

    ConnectionFactory rabbit() {
        String hostPort = env("TXBOX_BENCH_RABBIT", env("TXBOX_TEST_RABBIT", "127.0.0.1:5672"));
        ConnectionFactory f = new ConnectionFactory();
        int colon = hostPort.lastIndexOf(':');
        f.setHost(colon > 0 ? hostPort.substring(0, colon) : hostPort);
        f.setPort(colon > 0 ? Integer.parseInt(hostPort.substring(colon + 1)) : 5672);
        f.setUsername(env("TXBOX_BENCH_RABBIT_USER", "guest"));
        f.setPassword(env("TXBOX_BENCH_RABBIT_PASSWORD", "guest"));
        f.setAutomaticRecoveryEnabled(false);
        return f;
    }

    void onClose(AutoCloseable c) {
        closeables.add(c);
    }

    @Override
    public void close() {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            try {
                closeables.get(i).close();
            } catch (Exception e) {
                log.warn("closing {} failed: {}", closeables.get(i), e.toString());
            }
        }
        if (schemaCreated && !keepSchema) {
            try (Connection c = adminConnection(); Statement s = c.createStatement()) {
                s.execute("DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE");
            } catch (SQLException e) {
                log.warn("dropping schema {} failed: {}", schema, e.toString());
            }
        }
        if (broker != null) {
            try {
                broker.close();
            } catch (RuntimeException e) {
                log.warn("stopping the Kafka broker failed: {}", e.toString());
            }
        }
    }
}
