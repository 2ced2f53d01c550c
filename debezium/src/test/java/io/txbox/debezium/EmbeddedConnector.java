package io.txbox.debezium;

import static org.awaitility.Awaitility.await;

import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.txbox.TxboxTables;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.testkit.TestDatabase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.connect.converters.ByteArrayConverter;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;

/**
 * Debezium's embedded engine in this JVM (the test JVM, or {@link EngineProcess}'s), reading one
 * test database's outbox through {@link TxboxOutboxRouter} and publishing what it emits to Kafka
 * the way a Kafka Connect worker does: {@link ByteArrayConverter} for key and value, {@link
 * SimpleHeaderConverter} for the headers, an idempotent producer with {@code acks=all}, and a
 * record's offset committed only after the broker confirmed it. Its offsets (and on MariaDB its
 * schema history) live in files, so a new instance of the same name resumes where the last one
 * committed; PostgreSQL's slot and publication stay until {@link #dropSlot}.
 */
final class EmbeddedConnector implements RunningConnector {
    static final String PROBE = "cdc-probe";

    final String name;
    private final TestDatabase db;
    private final KafkaProducer<byte[], byte[]> producer;
    private final ExecutorService runner = Executors.newSingleThreadExecutor();
    private final DebeziumEngine<RecordChangeEvent<SourceRecord>> engine;
    private final ByteArrayConverter keys = new ByteArrayConverter();
    private final ByteArrayConverter values = new ByteArrayConverter();
    private final SimpleHeaderConverter headers = new SimpleHeaderConverter();
    private final AtomicBoolean probed = new AtomicBoolean();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    /** Records published so far; at {@link #crashAt} the handler publishes and then fails before committing. */
    private final AtomicInteger published = new AtomicInteger();
    private volatile int crashAt = Integer.MAX_VALUE;
    private final Future<?> running;

    /** Starts a connector for {@code tables} in {@code db}, and returns once it streams (a probe went through). */
    static EmbeddedConnector start(TestDatabase db, TxboxTables tables, String name, Path offsets,
            KafkaProducer<byte[], byte[]> producer, Map<String, String> extra) {
        if (db.kind() == TestDatabase.Kind.POSTGRESQL) {
            createPublication(db, tables, name);
        }
        EmbeddedConnector c = new EmbeddedConnector(db, tables, name, offsets, producer, extra);
        try {
            c.awaitStreaming(tables);
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
        return c;
    }

    private EmbeddedConnector(TestDatabase db, TxboxTables tables, String name, Path offsets,
            KafkaProducer<byte[], byte[]> producer, Map<String, String> extra) {
        this.name = name;
        this.db = db;
        this.producer = producer;
        keys.configure(Map.of(), true);
        values.configure(Map.of(), false);
        headers.configure(Map.of());
        Properties p = new Properties();
        p.putAll(properties(db, tables, name, offsets));
        p.putAll(extra);
        engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class)).using(p)
                .using((success, message, error) -> {
                    if (!success) {
                        failure.compareAndSet(null, error != null ? error : new IllegalStateException(message));
                    }
                })
                .notifying(this::handleBatch).build();
        running = runner.submit(engine);
    }

    /** The engine's and the connector's properties, as a Debezium Server or Connect user would write them. */
    static Map<String, String> properties(TestDatabase db, TxboxTables tables, String name, Path offsets) {
        Map<String, String> p = new java.util.LinkedHashMap<>();
        p.put("name", name);
        p.put("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
        p.put("offset.storage.file.filename", offsets.resolve(name + ".offsets").toString());
        p.put("offset.flush.interval.ms", "100");
        p.put("poll.interval.ms", "10"); // the default 500 ms wait for more events would be most of the latency
        p.put("topic.prefix", name);
        p.put("snapshot.mode", "no_data");
        p.put("tombstones.on.delete", "false");
        p.put("table.include.list", tables.schema() + "." + tables.outboxTable());
        p.put("transforms", "txbox");
        p.put("transforms.txbox.type", TxboxOutboxRouter.class.getName());
        if (db.kind() == TestDatabase.Kind.POSTGRESQL) {
            p.put("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
            p.put("plugin.name", "pgoutput");
            p.put("slot.name", name);
            p.put("publication.name", name);
            p.put("publication.autocreate.mode", "disabled");
            p.put("database.hostname", "127.0.0.1");
            p.put("database.port", "5432");
            p.put("database.user", db.user());
            p.put("database.password", db.password());
            p.put("database.dbname", "test");
        } else {
            p.put("connector.class", "io.debezium.connector.mariadb.MariaDbConnector");
            p.put("database.hostname", "127.0.0.1");
            p.put("database.port", "3306");
            p.put("database.user", db.user());
            p.put("database.password", db.password());
            p.put("database.server.id", String.valueOf(100_000 + Math.floorMod(name.hashCode(), 1_000_000)));
            p.put("database.include.list", tables.schema());
            p.put("include.schema.changes", "false");
            p.put("schema.history.internal", "io.debezium.storage.file.history.FileSchemaHistory");
            p.put("schema.history.internal.file.filename", offsets.resolve(name + ".history").toString());
        }
        return p;
    }

    @Override
    public void crashAt(int n) {
        crashAt = n;
    }

    @Override
    public boolean stopped() {
        return running.isDone();
    }

    @Override
    public int published() {
        return published.get();
    }

    /** Blocks until the engine stopped: on its own, or closed by another thread. */
    void awaitStopped() throws InterruptedException {
        try {
            running.get();
        } catch (ExecutionException | java.util.concurrent.CancellationException e) {
            // stopped all the same; the failure is kept in failure()
        }
    }

    Throwable failure() {
        return failure.get();
    }

    private void handleBatch(List<RecordChangeEvent<SourceRecord>> batch,
            DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer) throws InterruptedException {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        boolean crash = false;
        for (RecordChangeEvent<SourceRecord> event : batch) {
            SourceRecord r = event.record();
            if (r == null || r.topic() == null) {
                continue;
            }
            if (r.topic().startsWith(PROBE)) {
                probed.set(true);
                continue;
            }
            sent.add(producer.send(toKafka(r)));
            if (published.incrementAndGet() >= crashAt) {
                crash = true;
            }
        }
        for (Future<RecordMetadata> f : sent) {
            try {
                f.get(30, TimeUnit.SECONDS);
            } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException("publish failed", e);
            }
        }
        if (crash) {
            crashAt = Integer.MAX_VALUE;
            throw new IllegalStateException("crash after publishing, before committing offsets");
        }
        for (RecordChangeEvent<SourceRecord> event : batch) {
            committer.markProcessed(event);
        }
        committer.markBatchFinished();
    }

    /** What a Connect worker makes of a transformed record. */
    private ProducerRecord<byte[], byte[]> toKafka(SourceRecord r) {
        List<org.apache.kafka.common.header.Header> kafkaHeaders = new ArrayList<>();
        for (Header h : r.headers()) {
            kafkaHeaders.add(new RecordHeader(h.key(), headers.fromConnectHeader(r.topic(), h.key(), h.schema(), h.value())));
        }
        return new ProducerRecord<>(r.topic(), r.kafkaPartition(), keys.fromConnectData(r.topic(), r.keySchema(), r.key()),
                values.fromConnectData(r.topic(), r.valueSchema(), r.value()), kafkaHeaders);
    }

    private void awaitStreaming(TxboxTables tables) {
        Outbox probe = Outbox.builder().tables(tables).changeDataCapture().build();
        AtomicInteger n = new AtomicInteger();
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).until(() -> {
            if (stopped()) {
                throw new IllegalStateException("connector " + name + " stopped", failure.get());
            }
            try (Connection c = db.connection()) {
                c.setAutoCommit(false);
                probe.send(c, OutboxMessage.builder(StepKey.of(name + "-" + n.incrementAndGet(), "probe"), PROBE).payload("p").build());
                c.commit();
            }
            return probed.get();
        });
    }

    @Override
    public void close() {
        if (runner.isShutdown()) {
            return;
        }
        try {
            if (!running.isDone()) {
                engine.close();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        runner.shutdown();
        try {
            runner.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void createPublication(TestDatabase db, TxboxTables tables, String name) {
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
 try (var rs = st.executeQuery("SELECT 1 FROM pg_publication WHERE pubname = '" + name + "'")) {
                if (rs.next()) {
                    return;
                }
            }
            st.execute("CREATE PUBLICATION " + name + " FOR TABLE " + db.qualified(tables.schema(), tables.outboxTable())
                    + " WITH (publish = 'insert')");
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Drops the replication slot (once inactive) and publication of {@code name}; nothing on MariaDB. */
    static void dropSlot(TestDatabase db, String name) {
        if (db.kind() != TestDatabase.Kind.POSTGRESQL) {
            return;
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            try (Connection c = db.connection(); Statement st = c.createStatement()) {
                // a stopped engine's walsender can linger for a moment; it is this test's own
                st.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
                        + " WHERE slot_name = '" + name + "' AND active");
                st.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                        + " WHERE slot_name = '" + name + "' AND NOT active");
                try (var rs = st.executeQuery("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + name + "'")) {
                    rs.next();
                    return rs.getInt(1) == 0;
                }
            }
        });
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            st.execute("DROP PUBLICATION IF EXISTS " + name);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A fresh name for a connector: its slot, publication and topic prefix. */
    static String newName(String hint) {
        return "txbox_cdc_" + hint + "_" + Long.toString(ThreadLocalRandom.current().nextLong(1L << 40), 36);
    }

    /** Deletes an {@link #offsetsDir()} with the offsets, schema histories and logs in it. */
    static void deleteOffsets(Path dir) {
        try (java.util.stream.Stream<Path> files = Files.walk(dir)) {
            for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(f);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Path offsetsDir() {
        try {
            return Files.createTempDirectory("txbox-cdc");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
