package io.txbox.inbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.InvalidInputException;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link Inbox#process}: the one-call transaction, failure counting, DEAD entries and their reset. */
class InboxProcessIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    static final Map<Outcome.Status, AtomicInteger> heard = new ConcurrentHashMap<>();

    private TestDatabase db;
    private Rows rows;
    private Inbox inbox;

    private void use(TestDatabase db) {
        this.db = db;
        rows = Rows.of(db);
        inbox = Inbox.builder("payments").tables(rows.tables).maxAttempts(3)
                .listener(new InboxListener() {
                    @Override
                    public void onOutcome(String consumer, Outcome.Status status) {
                        heard.computeIfAbsent(status, s -> new AtomicInteger()).incrementAndGet();
                    }
                })
                .build();
        rows.execute("create table if not exists " + rows.table("business") + " (message_key " + rows.text()
                + " not null)");
    }

    private long business(String key) {
        return rows.queryLong("select count(*) from " + rows.table("business") + " where message_key = '" + key + "'");
    }

    private Handler inserting(String result) {
        return (tx, m) -> {
            insert(tx, m.key());
            return result.getBytes(UTF_8);
        };
    }

    private void insert(Connection tx, String key) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement("insert into " + rows.table("business") + " values (?)")) {
            ps.setString(1, key);
            ps.executeUpdate();
        }
    }

    private Handler failing(String message) {
        return (tx, m) -> {
            insert(tx, m.key());
            throw new IllegalStateException(message);
        };
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_firstThenRedelivered_runsOnceAndReplaysStoredResult(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.of("pay-1", "charge 10".getBytes(UTF_8));
        AtomicInteger calls = new AtomicInteger();
        Handler h = (tx, msg) -> {
            calls.incrementAndGet();
            return inserting("charged:abc").handle(tx, msg);
        };

        Outcome first = inbox.process(db.dataSource(), m, h);
        Outcome second = inbox.process(db.dataSource(), m, h);

        assertThat(first.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(first.isFinal()).isTrue();
        assertThat(second.status()).isEqualTo(Outcome.Status.DUPLICATE);
        assertThat(second.result()).asString(UTF_8).isEqualTo("charged:abc");
        assertThat(calls).hasValue(1);
        assertThat(business("pay-1")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_handlerSeesHeadersIncludingTraceContext(TestDatabase db) {
        use(db);
        String traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        InboundMessage m = InboundMessage.builder("pay-trace", new byte[0])
                .header("traceparent", traceparent).header("tracestate", "vendor=1").build();
        AtomicInteger seen = new AtomicInteger();
        inbox.process(db.dataSource(), m, (tx, msg) -> {
            if (traceparent.equals(msg.header("traceparent")) && "vendor=1".equals(msg.header("tracestate"))) {
                seen.incrementAndGet();
            }
            return null;
        });
        assertThat(seen).hasValue(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_handlerThrows_rollsBackBusinessWritesButCountsAttemptAndError(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.of("pay-fail", new byte[] {1});

        Outcome outcome = inbox.process(db.dataSource(), m, failing("gateway said no"));

        assertThat(outcome.status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(outcome.isFinal()).isFalse();
        assertThat(outcome.attempts()).isEqualTo(1);
        assertThat(outcome.error()).isInstanceOf(IllegalStateException.class);
        assertThat(outcome.reason()).isEqualTo("java.lang.IllegalStateException: gateway said no");
        assertThat(business("pay-fail")).isZero();
        assertThat(rows.status("payments", "pay-fail")).isEqualTo("FAILED");
        assertThat(rows.string("select last_error from " + rows.inbox() + " where message_key = 'pay-fail'"))
                .isEqualTo("java.lang.IllegalStateException: gateway said no");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_failedThenSucceeds_runsAgainAndCountsBothAttempts(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.of("pay-retry", new byte[] {1});
        inbox.process(db.dataSource(), m, failing("timeout"));

        Outcome retried = inbox.process(db.dataSource(), m, inserting("ok"));

        assertThat(retried.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(retried.attempts()).isEqualTo(2);
        assertThat(business("pay-retry")).isEqualTo(1);
        assertThat(inbox.process(db.dataSource(), m, inserting("again")).result()).asString(UTF_8).isEqualTo("ok");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_failsMaxAttemptsTimes_becomesDeadAndLaterDeliveriesReportDeadWithReason(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.of("pay-poison", new byte[] {1});
        assertThat(inbox.process(db.dataSource(), m, failing("bad 1")).status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(inbox.process(db.dataSource(), m, failing("bad 2")).status()).isEqualTo(Outcome.Status.FAILED);
        Outcome third = inbox.process(db.dataSource(), m, failing("bad 3"));
        assertThat(third.status()).isEqualTo(Outcome.Status.DEAD);
        assertThat(third.isFinal()).isTrue();
        assertThat(third.attempts()).isEqualTo(3);

        AtomicInteger calls = new AtomicInteger();
        Outcome later = inbox.process(db.dataSource(), m, (tx, msg) -> {
            calls.incrementAndGet();
            return null;
        });
        assertThat(later.status()).isEqualTo(Outcome.Status.DEAD);
        assertThat(later.reason()).contains("bad 3");
        assertThat(calls).hasValue(0);
        assertThat(business("pay-poison")).isZero();
        assertThat(inbox.listDead(db.dataSource(), 100)).extracting(DeadEntry::key).contains("pay-poison");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void resetDead_deadEntry_nextDeliveryRunsTheHandlerAgain(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.of("pay-reset", new byte[] {1});
        for (int i = 0; i < 3; i++) {
            inbox.process(db.dataSource(), m, failing("down"));
        }
        assertThat(rows.status("payments", "pay-reset")).isEqualTo("DEAD");

        assertThat(inbox.resetDead(db.dataSource(), "pay-reset")).isTrue();
        assertThat(inbox.resetDead(db.dataSource(), "pay-reset")).isFalse();
        Outcome after = inbox.process(db.dataSource(), m, inserting("finally"));

        assertThat(after.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(after.attempts()).isEqualTo(1);
        assertThat(business("pay-reset")).isEqualTo(1);
        assertThat(inbox.listDead(db.dataSource(), 100)).extracting(DeadEntry::key).doesNotContain("pay-reset");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void listDead_reportsTenantAndReasonOfThisConsumerOnly(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.builder("pay-dead-tenant", new byte[] {1}).tenant("acme").build();
        for (int i = 0; i < 3; i++) {
            inbox.process(db.dataSource(), m, failing("card expired"));
        }
        Inbox other = Inbox.builder("payments-eu").tables(rows.tables).maxAttempts(1).build();
        other.process(db.dataSource(), InboundMessage.of("pay-other", new byte[0]), failing("x"));

        List<DeadEntry> dead = inbox.listDead(db.dataSource(), 100);
        assertThat(dead).filteredOn(d -> d.key().equals("pay-dead-tenant")).singleElement().satisfies(d -> {
            assertThat(d.tenant()).isEqualTo("acme");
            assertThat(d.attempts()).isEqualTo(3);
            assertThat(d.reason()).contains("card expired");
        });
        assertThat(dead).extracting(DeadEntry::key).doesNotContain("pay-other");
        assertThat(other.listDead(db.dataSource(), 100)).extracting(DeadEntry::key).containsExactly("pay-other");
        assertThat(inbox.resetDead(db.dataSource(), "pay-dead-tenant", "acme")).isTrue();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_handlerResultOverCap_isRefusedAndWritesNothing(TestDatabase db) {
        use(db);
        Inbox capped = Inbox.builder("capped").tables(rows.tables).maxPayloadBytes(16).build();
        InboundMessage m = InboundMessage.of("pay-too-big", "charge 10".getBytes(UTF_8));

        assertThatThrownBy(() -> capped.process(db.dataSource(), m, inserting("x".repeat(17))))
                .isInstanceOf(InvalidInputException.class)
                .hasMessageContaining("17 bytes, more than maxPayloadBytes 16");

        assertThat(rows.count("consumer = 'capped'")).isZero();
        assertThat(business("pay-too-big")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_sameKeyDifferentPayload_reportsKeyReusedAndRunsNothing(TestDatabase db) {
        use(db);
        inbox.process(db.dataSource(), InboundMessage.of("pay-reuse", "a".getBytes(UTF_8)), inserting("ok"));
        AtomicInteger calls = new AtomicInteger();

        Outcome reused = inbox.process(db.dataSource(), InboundMessage.of("pay-reuse", "b".getBytes(UTF_8)),
                (tx, m) -> {
                    calls.incrementAndGet();
                    return null;
                });

        assertThat(reused.status()).isEqualTo(Outcome.Status.KEY_REUSED);
        assertThat(reused.isFinal()).isTrue();
        assertThat(reused.reason()).contains("pay-reuse").contains("different payload fingerprint");
        assertThat(calls).hasValue(0);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_handlerHitsSerializationFailure_retriesTheWholeTransaction(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.of("pay-serial", new byte[] {1});
        AtomicInteger calls = new AtomicInteger();

        Outcome outcome = inbox.process(db.dataSource(), m, (tx, msg) -> {
            insert(tx, msg.key());
            if (calls.incrementAndGet() == 1) {
                throw new SQLException("could not serialize access", "40001");
            }
            return null;
        });

        assertThat(outcome.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(outcome.attempts()).isEqualTo(1);
        assertThat(calls).hasValue(2);
        assertThat(business("pay-serial")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void recordFailure_forAdaptersOwnTransaction_countsInSeparateTransaction(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.of("pay-adapter", new byte[] {1});

        Outcome outcome = inbox.recordFailure(db.dataSource(), m, new RuntimeException("broker said no"));

        assertThat(outcome.status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(outcome.attempts()).isEqualTo(1);
        assertThat(rows.status("payments", "pay-adapter")).isEqualTo("FAILED");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void recordFailure_afterKeyCompleted_reportsDuplicateAndCountsNothing(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.of("pay-late-failure", new byte[] {1});
        inbox.process(db.dataSource(), m, inserting("done"));

        Outcome outcome = inbox.recordFailure(db.dataSource(), m, new RuntimeException("stale"));

        assertThat(outcome.status()).isEqualTo(Outcome.Status.DUPLICATE);
        assertThat(rows.status("payments", "pay-late-failure")).isEqualTo("COMPLETED");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void listener_hearsProcessedDuplicateAndFailed(TestDatabase db) {
        use(db);
        InboundMessage m = InboundMessage.of("pay-listen", new byte[] {1});
        int processed = count(Outcome.Status.PROCESSED);
        int duplicate = count(Outcome.Status.DUPLICATE);
        int failed = count(Outcome.Status.FAILED);
        assertThat(inbox.process(db.dataSource(), m, failing("gateway down")).status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(count(Outcome.Status.FAILED)).isEqualTo(failed + 1);
        inbox.process(db.dataSource(), m, inserting("x"));
        inbox.process(db.dataSource(), m, inserting("x"));
        assertThat(count(Outcome.Status.PROCESSED)).isEqualTo(processed + 1);
        assertThat(count(Outcome.Status.DUPLICATE)).isEqualTo(duplicate + 1);
        assertThat(count(Outcome.Status.FAILED)).isEqualTo(failed + 1);
    }

    private static int count(Outcome.Status s) {
        return heard.computeIfAbsent(s, x -> new AtomicInteger()).get();
    }
}
