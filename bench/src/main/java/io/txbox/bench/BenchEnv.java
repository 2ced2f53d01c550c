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
 * What one run talks to: a fresh schema (a database on MariaDB) with the txbox tables (dropped at the end),
 * connection pools on it, a Kafka broker (private, started as in the tests, unless {@code
 * --kafka} names one) and RabbitMQ.
 *
 * <p>{@code --db postgresql|mariadb} picks the database (default postgresql; every scenario
 * but sustained runs on both). Addresses come from
 * the environment: {@code TXBOX_BENCH_JDBC_URL} (else {@code TXBOX_TEST_JDBC_URL}, else {@code
 * jdbc:postgresql://127.0.0.1:5432/test}), {@code TXBOX_BENCH_JDBC_USER}/{@code _PASSWORD}
 * (default postgres, no password); with {@code --db mariadb} {@code TXBOX_BENCH_MARIADB_URL}
 * (else {@code TXBOX_TEST_MARIADB_URL}, else {@code jdbc:mariadb://127.0.0.1:3306/test}) and
 * {@code TXBOX_BENCH_MARIADB_USER}/{@code _PASSWORD} (default root, no password); {@code
 * TXBOX_BENCH_RABBIT} ({@code host:port}, default 127.0.0.1:5672, guest/guest). On MariaDB the
 * run's schema is a database.
 */
final class BenchEnv implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(BenchEnv.class);

    /** Whether the run is on MariaDB ({@code --db mariadb}) rather than PostgreSQL. */
    final boolean mariadb;
    private boolean usersPerPool;
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
        String db = opts.string("db", "postgresql", "database: postgresql or mariadb");
        if (!db.equals("postgresql") && !db.equals("mariadb")) {
            throw new Options.UsageException("--db must be postgresql or mariadb, but was " + db);
        }
        this.mariadb = db.equals("mariadb");
        if (mariadb) {
            this.jdbcUrl = env("TXBOX_BENCH_MARIADB_URL", env("TXBOX_TEST_MARIADB_URL", "jdbc:mariadb://127.0.0.1:3306/test"));
            this.user = env("TXBOX_BENCH_MARIADB_USER", env("TXBOX_TEST_MARIADB_USER", "root"));
            this.password = env("TXBOX_BENCH_MARIADB_PASSWORD", env("TXBOX_TEST_MARIADB_PASSWORD", ""));
        } else {
            this.jdbcUrl = env("TXBOX_BENCH_JDBC_URL", env("TXBOX_TEST_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
            this.user = env("TXBOX_BENCH_JDBC_USER", env("TXBOX_TEST_JDBC_USER", "postgres"));
            this.password = env("TXBOX_BENCH_JDBC_PASSWORD", env("TXBOX_TEST_JDBC_PASSWORD", ""));
        }
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
        if (mariadb) {
            // the pools' connections open in the run's database, so it must exist first
            try (Connection c = adminConnection(); Statement s = c.createStatement()) {
                schemaCreated = true;
                s.execute("CREATE DATABASE `" + schema + "` CHARACTER SET utf8mb4");
            }
        }
        try (HikariDataSource ds = pool("migrate", 3)) {
            // Flyway creates the schema before it can fail: drop it at the end either way
            schemaCreated = true;
            TxboxMigrations.migrate(ds, tables);
            try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
                // the "business write" of every scenario; deliberately without a unique key on
                // message_key, so a double effect shows up as a second row
                if (mariadb) {
                    s.execute("CREATE TABLE " + q("business") + " (id bigint AUTO_INCREMENT PRIMARY KEY,"
                            + " message_key varchar(255) NOT NULL, amount bigint NOT NULL,"
                            + " created_at timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), INDEX (message_key))");
                } else {
                    s.execute("CREATE TABLE \"" + schema + "\".business (id bigserial PRIMARY KEY, message_key text NOT NULL,"
                            + " amount bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");
                    s.execute("CREATE INDEX ON \"" + schema + "\".business (message_key)");
                }
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
        cfg.setConnectionTimeout(30_000);
        if (mariadb) {
            cfg.setCatalog(schema); // a schema is a database
            if (usersPerPool) {
                String poolUser = applicationName(name);
                ownUser(poolUser);
                cfg.setUsername(poolUser);
                cfg.setPassword("");
            }
        } else {
            // The schema as a startup parameter, not Hikari's setSchema: with auto-commit off,
            // that SET runs in the connection's first transaction, and the first rollback (the pool
            // rolls back a connection returned after a metadata call) silently undoes it.
            cfg.addDataSourceProperty("currentSchema", schema);
            // the same prepared statements run over and over: let pgjdbc switch to server-side
            // prepared statements after the default 5 executions (the default; stated for clarity)
            cfg.addDataSourceProperty("prepareThreshold", "5");
            cfg.addDataSourceProperty("ApplicationName", applicationName(name));
        }
        HikariDataSource ds = new HikariDataSource(cfg);
        closeables.add(ds);
        return ds;
    }

    /**
     * On MariaDB, pools made after this call log in as a user of their own, named as {@link
     * #applicationName}: its processlist has no application name, so a fault finds one pool's
     * sessions by their user. The users are dropped at the end of the run.
     */
    void usersPerPool() {
        usersPerPool = true;
    }

    private void ownUser(String poolUser) {
        try (Connection c = adminConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE USER '" + poolUser + "'@'%'");
            s.execute("CREATE USER '" + poolUser + "'@'localhost'");
            s.execute("GRANT ALL ON `" + schema + "`.* TO '" + poolUser + "'@'%', '" + poolUser + "'@'localhost'");
            // the URL's own database, which the driver opens before the pool switches to the run's
            String home = null;
            try (java.sql.ResultSet rs = s.executeQuery("SELECT DATABASE()")) {
                home = rs.next() ? rs.getString(1) : null;
            }
            if (home != null && !home.equals(schema)) {
                s.execute("GRANT SELECT ON `" + home + "`.* TO '" + poolUser + "'@'%', '" + poolUser + "'@'localhost'");
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create the pool's user " + poolUser + " on MariaDB (needs CREATE USER): "
                    + e.getMessage(), e);
        }
        closeables.add(() -> {
            try (Connection c = adminConnection(); Statement s = c.createStatement()) {
                s.execute("DROP USER IF EXISTS '" + poolUser + "'@'%', '" + poolUser + "'@'localhost'");
            }
        });
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
        return mariadb ? "`" + schema + "`.`" + table + "`" : "\"" + schema + "\".\"" + table + "\"";
    }

    String outboxTable() {
        return q(tables.outboxTable());
    }

    String deadTable() {
        return q(tables.outboxDeadTable());
    }

    String inboxTable() {
        return q(tables.inboxTable());
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
                s.execute(mariadb ? "DROP DATABASE IF EXISTS `" + schema + "`" : "DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE");
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
