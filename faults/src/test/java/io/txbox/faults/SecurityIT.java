package io.txbox.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import io.txbox.ConfigException;
import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.Relay;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.inbox.Outcome;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestPostgres;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

/** Injection attempts in names, credentials in messages and logs, and the size caps. */
class SecurityIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    static final String SECRET = "s3cr3tPa55";
    static final String JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"svc\""
            + " password=\"" + SECRET + "\";";

    static TxboxTables tables;

    @BeforeAll
    static void setUp() {
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
    }

    /** Names that try to break out of PostgreSQL's double quotes or MariaDB's backticks, or are not plain names. */
    static Stream<Arguments> injectionAttemptsOnEachDatabase() {
        return DBS.all().stream().flatMap(db -> Stream.of("public; DROP TABLE users; --",
                        "x\"; DROP SCHEMA public CASCADE; --", "x`; DROP DATABASE test; --", "a' OR '1'='1", "Public",
                        "sch ema", "s\u00e9ma", "1abc", "", "tx\u0000box", "schema\"", "schema`", "a.b",
                        "sssssssssssssssssssssssssssssssssssssssssssssssss")
                .map(bad -> Arguments.of(Named.of(db.kind().toString(), db), bad)));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("injectionAttemptsOnEachDatabase")
    void tables_injectionAttemptsInSchemaOrPrefix_rejectedBeforeAnySql(TestDatabase db, String bad) {
        assertThatThrownBy(() -> new TxboxTables(bad, "txbox_")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("schema");
        if (!bad.isEmpty()) { // an empty prefix is allowed
            assertThatThrownBy(() -> new TxboxTables("public", bad)).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("prefix");
        }
        assertThatThrownBy(() -> TxboxTables.inSchema(bad)).isInstanceOf(ConfigException.class);
        // the database's own tables are still migrated and in use under a valid name
        TxboxTables valid = TxboxTables.inSchema(db.schema());
        TxboxMigrations.migrate(db.dataSource(), valid);
        assertThat(Inbox.builder("injection").tables(valid).build().process(db.dataSource(),
                InboundMessage.of(bad.isEmpty() ? "empty" : bad.replace("\u0000", ""), new byte[] {1}),
                (tx, m) -> null).status()).isIn(Outcome.Status.PROCESSED, Outcome.Status.DUPLICATE);
        try (Connection c = db.dataSource().getConnection(); var s = c.createStatement();
                var rs = s.executeQuery("SELECT count(*) FROM information_schema.schemata"
                        + " WHERE lower(schema_name) LIKE '%drop%' OR schema_name LIKE '%''%' OR schema_name LIKE '%`%'")) {
            rs.next();
            assertThat(rs.getLong(1)).isZero();
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"orders'; DROP TABLE txbox_inbox; --", "a b", "consumer@tenant", "", "x\ny"})
    void inboxConsumerName_injectionAttempts_rejected(String bad) {
        assertThatThrownBy(() -> Inbox.builder(bad)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("consumer");
    }

    @Test
    void relayId_injectionAttempt_rejected() {
        assertThatThrownBy(() -> Relay.builder().relayId("r1'; DELETE FROM txbox_outbox; --"))
                .isInstanceOf(ConfigException.class).hasMessageContaining("relayId");
    }

    @Test
    void credentials_neverInExceptionMessagesToStringOrLogs() throws Exception {
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        Logger txbox = (Logger) LoggerFactory.getLogger("io.txbox");
        Logger kafkaLog = (Logger) LoggerFactory.getLogger("org.apache.kafka");
        Logger rabbitLog = (Logger) LoggerFactory.getLogger("com.rabbitmq");
        Level[] before = {txbox.getLevel(), kafkaLog.getLevel(), rabbitLog.getLevel()};
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        logs.start();
        root.addAppender(logs);
        txbox.setLevel(Level.DEBUG);
        kafkaLog.setLevel(Level.INFO);
        rabbitLog.setLevel(Level.DEBUG);
        List<String> seen = new ArrayList<>();
        try {
            // a malformed amqp URI holding a password
            seen.add(text(catchThrowable(() -> RabbitPublisher.builder()
                    .uri("amqp://svc:" + SECRET + "@127.0.0.1:notaport/vhost").build())));
            // a well-formed one that cannot connect
            seen.add(text(catchThrowable(() -> RabbitPublisher.builder()
                    .uri("amqp://svc:" + SECRET + "@127.0.0.1:1/").build())));
            // a Kafka config rejected because of another property, and one with a malformed JAAS entry
            seen.add(text(catchThrowable(() -> KafkaPublisher.builder().bootstrapServers("127.0.0.1:1")
                    .property("security.protocol", "SASL_PLAINTEXT").property("sasl.mechanism", "PLAIN")
                    .property("sasl.jaas.config", JAAS).property("linger.ms", "soon").build())));
            seen.add(text(catchThrowable(() -> KafkaPublisher.builder().bootstrapServers("127.0.0.1:1")
                    .property("security.protocol", "SASL_PLAINTEXT").property("sasl.mechanism", "PLAIN")
                    .property("sasl.jaas.config", JAAS.replace(";", "")).build())));
            seen.add(text(catchThrowable(() -> KafkaInboxConsumer.builder(Inbox.builder("sec").tables(tables).build(),
                            PG.dataSource(), (tx, m) -> null)
                    .bootstrapServers("127.0.0.1:1").topics("t").consumerProperty("sasl.jaas.config", JAAS)
                    .consumerProperty("ssl.truststore.password", SECRET).consumerProperty("enable.auto.commit", "true")
                    .build())));
            {
                var consumer = KafkaInboxConsumer.builder(Inbox.builder("sec2").tables(tables).build(), PG.dataSource(),
                                (tx, m) -> null)
                        .bootstrapServers("127.0.0.1:1").topics("t").consumerProperty("sasl.jaas.config", JAAS)
                        .producerProperty("sasl.jaas.config", JAAS).build();
                seen.add(String.valueOf(consumer));
                consumer.close();
            }

            // a relay whose broker login holds a secret and cannot reach the broker: status, health,
            // the stored last_error and the logs must not carry it
            Outbox outbox = Outbox.builder().tables(tables).build();
            try (Connection c = PG.dataSource().getConnection()) {
                c.setAutoCommit(false);
                outbox.send(c, OutboxMessage.builder(StepKey.of("sec-1", "s"), "secure").payload("x").build());
                c.commit();
            }
            KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers("127.0.0.1:1")
                    .property("security.protocol", "SASL_PLAINTEXT").property("sasl.mechanism", "PLAIN")
                    .property("sasl.jaas.config", JAAS).property("delivery.timeout.ms", "1200")
                    .property("request.timeout.ms", "500").property("max.block.ms", "600").build();
            seen.add(String.valueOf(kafka));
            try (Relay relay = Relay.builder().dataSource(PG.dataSource()).tables(tables).route("secure", kafka.topic("t"))
                    .pollInterval(Duration.ofMillis(20)).publishTimeout(Duration.ofSeconds(2)).laneLease(Duration.ofSeconds(5))
                    .backoff(Duration.ofMillis(50), Duration.ofMillis(200)).build()) {
                relay.start();
                Db db = new Db(PG);
                await().atMost(Duration.ofSeconds(30)).until(() -> db.queryLong("SELECT count(*) FROM "
                        + tables.qualified(tables.outboxTable()) + " WHERE attempts > 0") > 0);
                seen.add(String.valueOf(relay));
                seen.add(String.valueOf(relay.status()));
                seen.add(String.valueOf(relay.health(Duration.ofSeconds(1))));
                seen.add(db.queryString("SELECT string_agg(last_error, ' | ') FROM " + tables.qualified(tables.outboxTable())));
            }
        } finally {
            root.detachAppender(logs);
            txbox.setLevel(before[0]);
            kafkaLog.setLevel(before[1]);
            rabbitLog.setLevel(before[2]);
        }
        for (ILoggingEvent e : logs.list) {
            seen.add(e.getFormattedMessage() + (e.getThrowableProxy() == null ? ""
                    : ThrowableProxyUtil.asString(e.getThrowableProxy())));
        }
        assertThat(seen).hasSizeGreaterThan(10);
        assertThat(seen).allSatisfy(s -> assertThat(s).doesNotContain(SECRET));
    }

    @Test
    void sizeCaps_keysHeadersPayloadsAndResults_enforcedWithClearErrorsAndNothingWritten() throws Exception {
        Inbox inbox = Inbox.builder("caps").tables(tables).maxPayloadBytes(1024).build();
        Db db = new Db(PG);
        String longKey = "k".repeat(256);
        assertThatThrownBy(() -> inbox.process(PG.dataSource(), InboundMessage.of(longKey, new byte[1]), (tx, m) -> null))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("256 bytes").hasMessageContaining("255");
        assertThatThrownBy(() -> inbox.process(PG.dataSource(), InboundMessage.of("big", new byte[1025]), (tx, m) -> null))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("1025 bytes")
                .hasMessageContaining("maxPayloadBytes 1024");
        assertThatThrownBy(() -> inbox.process(PG.dataSource(), InboundMessage.builder("t", new byte[1])
                .tenant("t".repeat(300)).build(), (tx, m) -> null)).isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("tenant");
        assertThatThrownBy(() -> inbox.process(PG.dataSource(), InboundMessage.of("big-result", new byte[1]),
                (tx, m) -> new byte[2048])).isInstanceOf(InvalidInputException.class).hasMessageContaining("2048 bytes");
        assertThat(db.queryLong("SELECT count(*) FROM " + tables.qualified(tables.inboxTable())
                + " WHERE message_key = 'big-result'")).isZero();

        assertThatThrownBy(() -> StepKey.of("o".repeat(300), "pay")).isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("more than the limit of 255");
        assertThatThrownBy(() -> OutboxMessage.builder(StepKey.of("o", "s"), "d").header("h".repeat(256), "v"))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("header name");
        OutboxMessage.Builder many = OutboxMessage.builder(StepKey.of("o", "s"), "d");
        assertThatThrownBy(() -> {
            for (int i = 0; i < 100; i++) {
                many.header("h" + i, "v".repeat(1000));
            }
        }).isInstanceOf(InvalidInputException.class).hasMessageContaining("headers exceed");
        Outbox outbox = Outbox.builder().tables(tables).build();
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> outbox.send(c, OutboxMessage.builder(StepKey.of("huge", "s"), "d")
                    .payload(new byte[20 * 1024 * 1024]).build())).isInstanceOf(InvalidInputException.class)
                    .hasMessageContaining(String.valueOf(20 * 1024 * 1024));
            c.commit();
        }
        assertThat(db.queryLong("SELECT count(*) FROM " + tables.qualified(tables.outboxTable())
                + " WHERE step_key = 'huge:s'")).isZero();
    }

    /** The whole text of a throwable: class, message and causes, as a stack trace prints them. */
    private static String text(Throwable t) {
        assertThat(t).isNotNull();
        StringWriter out = new StringWriter();
        t.printStackTrace(new PrintWriter(out));
        return out + " " + t;
    }

    /** A little SQL on the test's own pool. */
    private record Db(TestPostgres pg) {
        long queryLong(String sql) {
            return new Effects(pg.dataSource()).queryLong(sql);
        }

        String queryString(String sql) throws Exception {
            try (Connection c = pg.dataSource().getConnection(); var s = c.createStatement(); var rs = s.executeQuery(sql)) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
