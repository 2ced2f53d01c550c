package io.txbox.inbox.consumer;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.inbox.consumer.internal.Decision;
import io.txbox.inbox.consumer.internal.Delivery;
import io.txbox.inbox.consumer.internal.DeliveryProcessor;
import io.txbox.internal.KeyLogs;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Named;
import org.mariadb.jdbc.MariaDbDataSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The broker-neutral mechanism against a real database, PostgreSQL and MariaDB: key policy,
 * outcomes to decisions.
 */
class DeliveryProcessorIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    static final Map<TestDatabase.Kind, Effects> EFFECTS = new EnumMap<>(TestDatabase.Kind.class);
    static final Duration BACKOFF_INITIAL = Duration.ofMillis(100);
    static final Duration BACKOFF_MAX = Duration.ofSeconds(10);

    TestDatabase db;
    TxboxTables tables;
    Effects effects;

    @BeforeAll
    static void migrate() {
        for (TestDatabase d : DBS.all()) {
            TxboxMigrations.migrate(d.dataSource(), TxboxTables.inSchema(d.schema()));
            EFFECTS.put(d.kind(), new Effects(d));
        }
    }

    /** Runs the test on {@code database}. */
    private void use(TestDatabase database) {
        db = database;
        tables = TxboxTables.inSchema(database.schema());
        effects = EFFECTS.get(database.kind());
    }

    /** The shared builder, as a broker adapter would extend it. */
    static final class TestBuilder extends ConsumerBuilder<TestBuilder> {
        TestBuilder(Inbox inbox, DataSource ds, Handler handler) {
            super(inbox, ds, handler);
        }

        TestBuilder(TwoPhaseStore store, TwoPhaseHandler handler) {
            super(store, handler);
        }

        @Override
        protected TestBuilder self() {
            return this;
        }

        TestBuilder keyPolicy(KeyPolicy policy) {
            setKeyPolicy(policy);
            return this;
        }
    }

    private Inbox inbox(String consumer) {
        return Inbox.builder(consumer).tables(tables).maxAttempts(3).build();
    }

    private DeliveryProcessor processor(String consumer, Handler handler) {
        return new TestBuilder(inbox(consumer), db.dataSource(), handler).backoff(BACKOFF_INITIAL, BACKOFF_MAX).processor();
    }

    private static Delivery delivery(String key) {
        return new Delivery("t-0@1", "t-0-1", key == null ? null : key.getBytes(UTF_8), "pay".getBytes(UTF_8),
                Map.of("traceparent", "00-abc-def-01"), false);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_firstThenDuplicate_acksBothAndAppliesOnce(TestDatabase database) {
        use(database);
        DeliveryProcessor p = processor("proc-dup", effects.recorder("proc-dup"));

        Decision first = p.process(delivery("k1"));
        Decision second = p.process(delivery("k1"));

        assertThat(first).isInstanceOfSatisfying(Decision.Ack.class,
                a -> assertThat(a.outcome().status()).isEqualTo(Outcome.Status.PROCESSED));
        assertThat(second).isInstanceOfSatisfying(Decision.Ack.class,
                a -> assertThat(a.outcome().status()).isEqualTo(Outcome.Status.DUPLICATE));
        assertThat(effects.count("proc-dup", "k1")).isEqualTo(1);
        assertThat(effects.traceparent("proc-dup", "k1")).isEqualTo("00-abc-def-01");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_handlerThrows_retriesWithGrowingBackoffThenDeadLettersWithReason(TestDatabase database) {
        use(database);
        CountingListener listener = new CountingListener();
        DeliveryProcessor p = new TestBuilder(inbox("proc-poison"), db.dataSource(), (tx, m) -> {
            throw new IllegalStateException("card declined");
        }).backoff(BACKOFF_INITIAL, BACKOFF_MAX).listener(listener).processor();

        Decision d1 = p.process(delivery("poison"));
        Decision d2 = p.process(delivery("poison"));
        Decision d3 = p.process(delivery("poison"));
        Decision again = p.process(delivery("poison"));

        assertThat(d1).isInstanceOfSatisfying(Decision.Retry.class, r -> {
            assertThat(r.delay()).isBetween(Duration.ofMillis(50), Duration.ofMillis(100));
            assertThat(r.reason()).contains("card declined");
        });
        assertThat(d2).isInstanceOfSatisfying(Decision.Retry.class,
                r -> assertThat(r.delay()).isBetween(Duration.ofMillis(100), Duration.ofMillis(200)));
        assertThat(d3).isInstanceOfSatisfying(Decision.DeadLetter.class,
                d -> assertThat(d.reason()).contains("dead after 3 attempts").contains("card declined"));
        assertThat(again).isInstanceOf(Decision.DeadLetter.class);
        assertThat(listener.retries).hasSize(2);
        assertThat(listener.count(Outcome.Status.DEAD)).isEqualTo(2);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_missingKey_deadLettersNamingTheHeader(TestDatabase database) {
        use(database);
        DeliveryProcessor p = processor("proc-missing", effects.recorder("proc-missing"));

        Decision d = p.process(delivery(null));

        assertThat(d).isInstanceOfSatisfying(Decision.DeadLetter.class,
                dl -> assertThat(dl.reason()).contains("\"idempotency-key\"").contains("missing"));
        assertThat(effects.total("proc-missing")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_malformedKeys_deadLetteredWithReason(TestDatabase database) {
        use(database);
        DeliveryProcessor p = processor("proc-malformed", effects.recorder("proc-malformed"));

        Decision control = p.process(delivery("bad\nkey"));
        Decision notUtf8 = p.process(new Delivery("t-0@2", null, new byte[] {(byte) 0xC3, (byte) 0x28},
                new byte[0], Map.of(), false));
        Decision empty = p.process(delivery(""));

        assertThat(control).isInstanceOfSatisfying(Decision.DeadLetter.class,
                d -> assertThat(d.reason()).contains("control character"));
        assertThat(notUtf8).isInstanceOfSatisfying(Decision.DeadLetter.class,
                d -> assertThat(d.reason()).contains("not valid UTF-8"));
        assertThat(empty).isInstanceOfSatisfying(Decision.DeadLetter.class,
                d -> assertThat(d.reason()).contains("empty"));
        assertThat(effects.total("proc-malformed")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_missingKeyUnderTransportCoordinates_keyedByTopicPartitionOffset(TestDatabase database) {
        use(database);
        DeliveryProcessor p = new TestBuilder(inbox("proc-coords"), db.dataSource(), effects.recorder("proc-coords"))
                .keyPolicy(KeyPolicy.TRANSPORT_COORDINATES).processor();

        Decision first = p.process(delivery(null));
        Decision redelivered = p.process(delivery(null));

        assertThat(first).isInstanceOf(Decision.Ack.class);
        assertThat(redelivered).isInstanceOfSatisfying(Decision.Ack.class,
                a -> assertThat(a.outcome().status()).isEqualTo(Outcome.Status.DUPLICATE));
        assertThat(effects.countsByKey("proc-coords")).containsExactly(Map.entry("t-0-1", 1));
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_customKeyHeaderName_namedInReason(TestDatabase database) {
        use(database);
        DeliveryProcessor p = new TestBuilder(inbox("proc-header"), db.dataSource(), effects.recorder("proc-header"))
                .keyHeader("x-request-id").processor();

        Decision d = p.process(delivery(null));

        assertThat(d).isInstanceOfSatisfying(Decision.DeadLetter.class,
                dl -> assertThat(dl.reason()).contains("\"x-request-id\""));
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_databaseUnreachable_retriesWithGrowingBackoffAndRecordsNothing(TestDatabase database) throws Exception {
        use(database);
        CountingListener listener = new CountingListener();
        AtomicInteger handlerRuns = new AtomicInteger();
        Handler handler = (tx, m) -> {
            handlerRuns.incrementAndGet();
            return effects.recorder("proc-down").handle(tx, m);
        };
        DeliveryProcessor p = new TestBuilder(inbox("proc-down"), unreachableDatabase(), handler)
                .backoff(BACKOFF_INITIAL, BACKOFF_MAX).listener(listener).processor();

        Decision d1 = p.process(delivery("k"));
        Decision d2 = p.process(delivery("k"));
        Decision d3 = p.process(delivery("k"));

        assertThat(d1).isInstanceOf(Decision.Retry.class);
        assertThat(((Decision.Retry) d3).delay()).isGreaterThanOrEqualTo(Duration.ofMillis(200));
        assertThat(((Decision.Retry) d2).delay()).isGreaterThanOrEqualTo(Duration.ofMillis(100));
        assertThat(listener.retries).hasSize(3);
        assertThat(listener.errors.get()).as("each attempt reported the refused connection").isEqualTo(3);
        assertThat(handlerRuns).hasValue(0);
        assertThat(effects.total("proc-down")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_hashKeysInLogs_inboxRefusalLoggedWithTheHashNeverTheKey(TestDatabase database) {
        use(database);
        String key = "alice@example.com";
        Inbox capped = Inbox.builder("proc-hashed").tables(tables).maxPayloadBytes(4).build();
        DeliveryProcessor p = new TestBuilder(capped, db.dataSource(), effects.recorder("proc-hashed"))
                .hashKeysInLogs(true).processor();
        ch.qos.logback.classic.Logger logger =
                (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(DeliveryProcessor.class);
        ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> logs =
                new ch.qos.logback.core.read.ListAppender<>();
        logs.start();
        logger.addAppender(logs);
        Decision d;
        try {
            d = p.process(new Delivery("t-0@9", null, key.getBytes(UTF_8), "a payload over four bytes".getBytes(UTF_8),
                    Map.of(), false));
        } finally {
            logger.detachAppender(logs);
        }

        assertThat(d).isInstanceOf(Decision.DeadLetter.class);
        List<String> lines = logs.list.stream().map(e -> e.getFormattedMessage()).toList();
        assertThat(lines).anyMatch(l -> l.contains("refused by the inbox") && l.contains(KeyLogs.hashOf(key)))
                .noneMatch(l -> l.contains(key));
    }

    enum Mode { ONE_TRANSACTION_PER_DELIVERY, BATCH, TWO_PHASE }

    static Stream<Arguments> databasesAndModes() {
        return DBS.all().stream().flatMap(d -> Stream.of(Mode.values())
                .map(m -> Arguments.of(Named.of(d.kind().toString(), d), m)));
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("databasesAndModes")
    void process_tracing_eachHandlerRunsInAConsumerSpanUnderItsSendersSpan(TestDatabase database, Mode mode) {
        use(database);
        InMemorySpanExporter spans = InMemorySpanExporter.create();
        try (OpenTelemetrySdk otel = OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
                .addSpanProcessor(SimpleSpanProcessor.create(spans)).build()).build()) {
            String consumer = "proc-trace-" + mode.name().toLowerCase(java.util.Locale.ROOT);
            Map<String, String> seen = new ConcurrentHashMap<>();
            TestBuilder builder = mode == Mode.TWO_PHASE
                    ? new TestBuilder(inbox(consumer).twoPhase(db.dataSource()), m -> {
                        seen.put(m.key(), Span.current().getSpanContext().getTraceId());
                        return null;
                    })
                    : new TestBuilder(inbox(consumer), db.dataSource(), (tx, m) -> {
                        seen.put(m.key(), Span.current().getSpanContext().getTraceId());
                        return null;
                    });
            DeliveryProcessor p = builder.batchSize(mode == Mode.BATCH ? 10 : 1).openTelemetry(otel).processor();
            List<Delivery> deliveries = List.of(traced("a", "0af7651916cd43dd8448eb211c80319c"),
                    traced("b", "4bf92f3577b34da6a3ce929d0e0e4736"));

            List<Decision> decisions = mode == Mode.BATCH ? p.processBatch(deliveries)
                    : deliveries.stream().map(p::process).toList();

            Decision duplicate = p.process(deliveries.get(0));

            assertThat(decisions).allMatch(d -> d instanceof Decision.Ack);
            assertThat(duplicate).as("a duplicate runs no handler and makes no span").isInstanceOfSatisfying(
                    Decision.Ack.class, a -> assertThat(a.outcome().status()).isEqualTo(Outcome.Status.DUPLICATE));
            assertThat(seen).containsEntry("a", "0af7651916cd43dd8448eb211c80319c")
                    .containsEntry("b", "4bf92f3577b34da6a3ce929d0e0e4736");
            assertThat(spans.getFinishedSpanItems()).hasSize(2).allSatisfy(span -> {
                assertThat(span.getKind()).isEqualTo(SpanKind.CONSUMER);
                assertThat(span.getName()).isEqualTo("process " + consumer);
                assertThat(span.getParentSpanId()).isEqualTo("b7ad6b7169203331");
            });
        }
    }

    private static Delivery traced(String key, String traceId) {
        return new Delivery("t-0@" + key, null, key.getBytes(UTF_8), "pay".getBytes(UTF_8),
                Map.of("traceparent", "00-" + traceId + "-b7ad6b7169203331-01"), false);
    }

    /**
     * A real data source of the test's database aimed at a local port nothing listens on (bound,
     * then released): every connection attempt is refused by the operating system.
     */
    private DataSource unreachableDatabase() throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }
        if (db.kind() == TestDatabase.Kind.MARIADB) {
            return new MariaDbDataSource("jdbc:mariadb://127.0.0.1:" + port + "/test?connectTimeout=5000&user="
                    + db.user());
        }
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setServerNames(new String[] {"127.0.0.1"});
        ds.setPortNumbers(new int[] {port});
        ds.setDatabaseName("test");
        ds.setUser(db.user());
        ds.setConnectTimeout(5);
        return ds;
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void listener_thatThrows_doesNotDisturbProcessing(TestDatabase database) {
        use(database);
        DeliveryProcessor p = new TestBuilder(inbox("proc-listener"), db.dataSource(), effects.recorder("proc-listener"))
                .listener(new ConsumerListener() {
                    @Override
                    public void onOutcome(String consumer, Outcome.Status status, Duration took) {
                        throw new IllegalStateException("broken metrics");
                    }
                }).processor();

        assertThat(p.process(delivery("k"))).isInstanceOf(Decision.Ack.class);
        assertThat(effects.count("proc-listener", "k")).isEqualTo(1);
    }

    private DeliveryProcessor batching(String consumer, Handler handler) {
        return new TestBuilder(inbox(consumer), db.dataSource(), handler).backoff(BACKOFF_INITIAL, BACKOFF_MAX)
                .batchSize(10).processor();
    }

    /** Records the effect and returns "result of KEY"; throws for keys that start with "poison". */
    private Handler resulting(String consumer) {
        Handler record = effects.recorder(consumer);
        return (tx, m) -> {
            record.handle(tx, m);
            if (m.key().startsWith("poison")) {
                throw new IllegalStateException("cannot parse");
            }
            return ("result of " + m.key()).getBytes(UTF_8);
        };
    }

    private static Outcome.Status status(Decision d) {
        return d instanceof Decision.Ack a ? a.outcome().status() : null;
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void processBatch_keyTwiceInOneBatch_secondIsDuplicateWithTheFirstsResultInTheSameTransaction(TestDatabase database) {
        use(database);
        java.util.Set<Long> transactions = ConcurrentHashMap.newKeySet();
        DeliveryProcessor p = batching("batch-twice", effects.recordingTransactions(transactions,
                resulting("batch-twice")));

        List<Decision> decisions = p.processBatch(List.of(delivery("a"), delivery("b"), delivery("a"), delivery("c")));

        assertThat(decisions).extracting(DeliveryProcessorIT::status).containsExactly(Outcome.Status.PROCESSED,
                Outcome.Status.PROCESSED, Outcome.Status.DUPLICATE, Outcome.Status.PROCESSED);
        assertThat(((Decision.Ack) decisions.get(2)).outcome().result()).asString(UTF_8).isEqualTo("result of a");
        assertThat(effects.countsByKey("batch-twice")).isEqualTo(Map.of("a", 1, "b", 1, "c", 1));
        assertThat(transactions).as("one transaction for the batch").hasSize(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void processBatch_duplicateAndDeadKeysAmongNewOnes_eachItsOwnDecisionInOneTransaction(TestDatabase database) {
        use(database);
        Inbox inbox = inbox("batch-mixed");
        inbox.process(db.dataSource(), io.txbox.inbox.InboundMessage.of("done", "pay".getBytes(UTF_8)),
                (tx, m) -> "earlier result".getBytes(UTF_8));
        for (int i = 0; i < 3; i++) {
            inbox.recordFailure(db.dataSource(), io.txbox.inbox.InboundMessage.of("dead", "pay".getBytes(UTF_8)),
                    new IllegalStateException("broken " + i));
        }
        java.util.Set<Long> transactions = ConcurrentHashMap.newKeySet();
        DeliveryProcessor p = new TestBuilder(inbox, db.dataSource(), effects.recordingTransactions(transactions,
                resulting("batch-mixed"))).batchSize(10).processor();

        List<Decision> decisions = p.processBatch(List.of(delivery("new-1"), delivery("done"), delivery("dead"),
                delivery("new-2")));

        assertThat(decisions).extracting(DeliveryProcessorIT::status).containsExactly(Outcome.Status.PROCESSED,
                Outcome.Status.DUPLICATE, null, Outcome.Status.PROCESSED);
        assertThat(((Decision.Ack) decisions.get(1)).outcome().result()).asString(UTF_8).isEqualTo("earlier result");
        assertThat(decisions.get(2)).isInstanceOfSatisfying(Decision.DeadLetter.class,
                d -> assertThat(d.reason()).contains("dead after 3 attempts").contains("broken 2"));
        assertThat(effects.countsByKey("batch-mixed")).isEqualTo(Map.of("new-1", 1, "new-2", 1));
        assertThat(transactions).as("one transaction for the batch").hasSize(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void processBatch_poisonRecordInTheBatch_theOthersBeforeItProcessedItRetriedNothingAfterItRun(TestDatabase database) {
        use(database);
        DeliveryProcessor p = batching("batch-poison", resulting("batch-poison"));

        List<Decision> decisions = p.processBatch(List.of(delivery("x"), delivery("poison"), delivery("y")));
        List<Decision> rest = p.processBatch(List.of(delivery("y")));

        assertThat(decisions).hasSize(2);
        assertThat(status(decisions.get(0))).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(decisions.get(1)).isInstanceOfSatisfying(Decision.Retry.class,
                r -> assertThat(r.reason()).contains("cannot parse"));
        assertThat(rest).extracting(DeliveryProcessorIT::status).containsExactly(Outcome.Status.PROCESSED);
        assertThat(effects.countsByKey("batch-poison")).as("the poison record's writes rolled back")
                .isEqualTo(Map.of("x", 1, "y", 1));
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void processBatch_keyReusedInTheBatch_deadLettersItAndTheOthersRunOnce(TestDatabase database) {
        use(database);
        DeliveryProcessor p = batching("batch-reuse", resulting("batch-reuse"));
        p.process(delivery("k"));
        Delivery reused = new Delivery("t-0@2", "t-0-2", "k".getBytes(UTF_8), "another payload".getBytes(UTF_8),
                Map.of(), false);

        List<Decision> decisions = p.processBatch(List.of(delivery("before"), reused, delivery("after")));

        assertThat(decisions).hasSize(3);
        assertThat(status(decisions.get(0))).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(decisions.get(1)).isInstanceOf(Decision.DeadLetter.class);
        assertThat(status(decisions.get(2))).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(effects.countsByKey("batch-reuse")).isEqualTo(Map.of("k", 1, "before", 1, "after", 1));
    }
}
