package io.txbox.debezium;

import io.txbox.TxboxTables;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabase.Kind;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * {@link EmbeddedConnector} as a process of its own: {@code EngineProcess JDBC_URL USER PASSWORD
 * SCHEMA BOOTSTRAP NAME [OFFSETS_DIR]}, on PostgreSQL or MariaDB as the URL says. The bench's {@code
 * cdc-kafka} scenario runs it on this module's test class path, where Kafka Connect and
 * kafka-clients are the version Debezium is built against, while the bench runs on the project's;
 * {@link ConnectorProcess} runs it on the MariaDB connector's own Debezium version. It prints {@code
 * READY} once the connector streams. An input line {@code crash N} makes it fail after publishing
 * {@code N} records ({@link EmbeddedConnector#crashAt}). A line {@code pause} stops the connector
 * and prints {@code PAUSED} (its slot and offsets stay); {@code resume} starts it again in this
 * JVM and prints {@code READY} once it streams. When the engine stops, on its own or
 * because the input ended, it prints {@code published N}, drops its slot and publication
 * (PostgreSQL), prints {@code STOPPED} and exits. Offsets and schema history go to OFFSETS_DIR,
 * so a process of the same name resumes there, or to a new temporary directory. With {@code drop}
 * in place of BOOTSTRAP it only drops slot and publication {@code NAME}: the clean-up after a
 * process that had to be killed.
 */
public final class EngineProcess {
    /** The running connector, for the input's commands. */
    private static volatile EmbeddedConnector current;
    /** Set by {@code pause} before it closes the connector: the main thread then waits for {@link #resumes}. */
    private static volatile boolean pausing;
    /** After a pause: true for {@code resume}, false when the input ended. */
    private static final BlockingQueue<Boolean> resumes = new LinkedBlockingQueue<>();

    private EngineProcess() {}

    public static void main(String[] args) throws IOException, InterruptedException {
        if (args.length != 6 && args.length != 7) {
            System.err.println("usage: EngineProcess JDBC_URL USER PASSWORD SCHEMA BOOTSTRAP NAME [OFFSETS_DIR]");
            System.exit(64);
        }
        Database db = new Database(args[0], args[1], args[2], args[3]);
        if (args[4].equals("drop")) {
            EmbeddedConnector.dropSlot(db, args[5]);
            System.exit(0);
        }
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[4]);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        String name = args[5];
        Path offsets = args.length == 7 ? Path.of(args[6]) : EmbeddedConnector.offsetsDir();
        // the server the URL names, not the tests' default one
        URI url = URI.create(args[0].substring("jdbc:".length()));
        Map<String, String> where = new HashMap<>();
        where.put("database.hostname", url.getHost());
        int defaultPort = db.kind() == Kind.POSTGRESQL ? 5432 : 3306;
        where.put("database.port", String.valueOf(url.getPort() >= 0 ? url.getPort() : defaultPort));
        if (db.kind() == Kind.POSTGRESQL) {
            where.put("database.dbname", url.getPath().substring(1));
        }
        // unused with file offsets, yet required by the Kafka Connect worker config Debezium 3.5 builds
        where.put("bootstrap.servers", args[4]);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            try {
                EmbeddedConnector connector = start(db, name, offsets, producer, where);
                Thread input = new Thread(EngineProcess::follow, "engine-input");
                input.setDaemon(true);
                input.start();
                while (true) {
                    connector.awaitStopped();
                    System.out.println("published " + connector.published());
                    if (connector.failure() != null) {
                        System.out.println("failed: " + connector.failure());
                    }
                    if (!pausing) {
                        break; // stopped on its own, or the input ended
                    }
                    pausing = false;
                    System.out.println("PAUSED");
                    System.out.flush();
                    if (!resumes.take()) {
                        break;
                    }
                    connector = start(db, name, offsets, producer, where);
                }
            } finally {
                EmbeddedConnector.dropSlot(db, name);
            }
        }
        System.out.println("STOPPED");
        System.out.flush();
        System.exit(0);
    }

    private static EmbeddedConnector start(Database db, String name, Path offsets, KafkaProducer<byte[], byte[]> producer,
            Map<String, String> where) {
        EmbeddedConnector c = EmbeddedConnector.start(db, TxboxTables.inSchema(db.schema()), name, offsets, producer, where);
        current = c;
        System.out.println("READY");
        System.out.flush();
        return c;
    }

    /**
     * Applies the input's lines: {@code crash N}; {@code pause}, which stops the connector and keeps
     * its slot and offsets; {@code resume}, which starts it again in this JVM, where its code is
     * already compiled. Closes the connector when the input ends.
     */
    private static void follow() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.startsWith("crash ")) {
                    current.crashAt(Integer.parseInt(line.substring("crash ".length()).strip()));
                    System.out.println("crash armed");
                    System.out.flush();
                } else if (line.strip().equals("pause")) {
                    pausing = true;
                    current.close();
                } else if (line.strip().equals("resume")) {
                    resumes.add(true);
                }
            }
        } catch (IOException e) {
            // a broken input is an ended one
        }
        resumes.add(false);
        current.close();
    }

    /** The schema the URL names, as much of a {@link TestDatabase} as {@link EmbeddedConnector} uses. */
    private record Database(String jdbcUrl, String user, String password, String schema) implements TestDatabase {
        @Override
        public Kind kind() {
            return jdbcUrl.startsWith("jdbc:postgresql:") ? Kind.POSTGRESQL : Kind.MARIADB;
        }

        @Override
        public Connection connection() {
            Properties p = new Properties();
            p.put("user", user);
            p.put("password", password);
            if (kind() == Kind.POSTGRESQL) {
                p.put("currentSchema", schema);
            } else {
                p.put("permitMysqlScheme", "true");
            }
            try {
                return DriverManager.getConnection(jdbcUrl, p);
            } catch (SQLException e) {
                throw new IllegalStateException("cannot connect to " + jdbcUrl + ": " + e.getMessage(), e);
            }
        }

        @Override
        public String qualified(String schema, String table) {
            return kind() == Kind.POSTGRESQL ? '"' + schema + "\".\"" + table + '"' : '`' + schema + "`.`" + table + '`';
        }

        @Override
        public String jdbcUrl(String schema) {
            throw new UnsupportedOperationException("an engine process reads one schema");
        }

        @Override
        public DataSource dataSource() {
            throw new UnsupportedOperationException("an engine process has no pool");
        }

        @Override
        public String newSchema(String hint) {
            throw new UnsupportedOperationException("an engine process reads one schema");
        }
    }
}
