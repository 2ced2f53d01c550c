package io.txbox.debezium;

import io.txbox.TxboxTables;
import io.txbox.testkit.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * {@link EmbeddedConnector} as a process of its own, for the bench's {@code cdc-kafka} scenario:
 * {@code EngineProcess JDBC_URL USER PASSWORD SCHEMA BOOTSTRAP NAME}. It runs on this module's test
 * class path, where Kafka Connect and kafka-clients are the version Debezium is built against,
 * while the bench runs on the project's. It prints {@code READY} once the connector streams, and
 * on the end of its input stops the connector, drops its slot and publication, prints {@code
 * STOPPED} and exits. With {@code drop} in place of BOOTSTRAP it only drops slot and publication
 * {@code NAME}: the clean-up after a process that had to be killed.
 */
public final class EngineProcess {
    private EngineProcess() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 6) {
            System.err.println("usage: EngineProcess JDBC_URL USER PASSWORD SCHEMA BOOTSTRAP NAME");
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
        // the database the bench's URL names, not the tests' default one
        URI url = URI.create(args[0].substring("jdbc:".length()));
        Map<String, String> where = Map.of("database.hostname", url.getHost(),
                "database.port", String.valueOf(url.getPort() < 0 ? 5432 : url.getPort()),
                "database.dbname", url.getPath().substring(1));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            try (EmbeddedConnector connector = EmbeddedConnector.start(db, TxboxTables.inSchema(db.schema()), name,
                    EmbeddedConnector.offsetsDir(), producer, where)) {
                System.out.println("READY");
                System.out.flush();
                while (System.in.read() >= 0) {
                    // runs until the bench closes our input (or ends)
                }
                System.out.println("published " + connector.published.get());
            } finally {
                EmbeddedConnector.dropSlot(db, name);
            }
        }
        System.out.println("STOPPED");
        System.out.flush();
        System.exit(0);
    }

    /** The bench's PostgreSQL schema, as much of a {@link TestDatabase} as {@link EmbeddedConnector} uses. */
    private record Database(String jdbcUrl, String user, String password, String schema) implements TestDatabase {
        @Override
        public Kind kind() {
            return Kind.POSTGRESQL;
        }

        @Override
        public Connection connection() {
            Properties p = new Properties();
            p.put("user", user);
            p.put("password", password);
            p.put("currentSchema", schema);
            try {
                return DriverManager.getConnection(jdbcUrl, p);
            } catch (SQLException e) {
                throw new IllegalStateException("cannot connect to " + jdbcUrl + ": " + e.getMessage(), e);
            }
        }

        @Override
        public String qualified(String schema, String table) {
            return '"' + schema + "\".\"" + table + '"';
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
