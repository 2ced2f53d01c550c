package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.internal.Tracing;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.internal.JsonStrings;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The outbox on PostgreSQL and on MariaDB: one suite, one invocation per database. */
class OutboxIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    /** One outbox per database: an outbox keeps the database of the first transaction it is given. */
    static final Map<TestDatabase.Kind, Outbox> OUTBOXES = new HashMap<>();

    TestDatabase db;
    TxboxTables tables;
    Outbox outbox;

    @BeforeAll
    static void migrate() {
        for (TestDatabase db : DBS.all()) {
            TxboxTables tables = new TxboxTables(db.schema(), "txbox_");
            TxboxMigrations.migrate(db.dataSource(), tables);
            OUTBOXES.put(db.kind(), Outbox.builder().tables(tables).maxRecordBytes(1000).build());
        }
    }

    private void on(TestDatabase db) {
        this.db = db;
        this.tables = new TxboxTables(db.schema(), "txbox_");
        this.outbox = OUTBOXES.get(db.kind());
    }

    private boolean postgres() {
        return db.kind() == TestDatabase.Kind.POSTGRESQL;
    }

    private static OutboxMessage message(String original, String step) {
        return OutboxMessage.builder(StepKey.of(original, step), "payments").routingKey("order-" + original)
                .payload("{\"amount\":10}").contentType("application/json").build();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_committed_rowIsWrittenWithStepKeyOriginalAndLane(TestDatabase db) throws Exception {
        on(db);
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            assertThat(outbox.send(c, message("A1", "process-payment"))).isTrue();
            c.commit();
        }
        try (Connection c = db.connection();
                PreparedStatement ps = c.prepareStatement("select original_key, destination, routing_key, lane, "
                        + "payload, content_type from " + db.qualified(db.schema(), tables.outboxTable())
                        + " where step_key = 'A1:process-payment'")) {
            ResultSet rs = ps.executeQuery();
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo("A1");
            assertThat(rs.getString(2)).isEqualTo("payments");
            assertThat(rs.getString(3)).isEqualTo("order-A1");
            assertThat(rs.getShort(4)).isEqualTo(Lanes.of("order-A1", "A1:process-payment"));
            assertThat(new String(rs.getBytes(5), java.nio.charset.StandardCharsets.UTF_8)).isEqualTo("{\"amount\":10}");
            assertThat(rs.getString(6)).isEqualTo("application/json");
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_rolledBack_leavesNoRow(TestDatabase db) throws Exception {
        on(db);
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            outbox.send(c, message("R1", "process-payment"));
            c.rollback();
        }
        assertThat(count("step_key = 'R1:process-payment'")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_sameStepKeyTwice_secondIsNoOpNotError(TestDatabase db) throws Exception {
        on(db);
        try (Connection c = transaction()) {
            assertThat(outbox.send(c, message("D1", "process-payment"))).isTrue();
            assertThat(outbox.send(c, message("D1", "process-payment"))).isFalse();
            c.commit();
        }
        assertThat(count("step_key = 'D1:process-payment'")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_sameStepKeyAfterTheRelayDeletedTheFirstRow_writesItAgain(TestDatabase db) throws Exception {
        on(db);
        try (Connection c = transaction()) {
            assertThat(outbox.send(c, message("P1", "process-payment"))).isTrue();
            c.commit();
        }
        try (Connection c = db.connection(); Statement st = c.createStatement()) {
            // what the relay does once the broker confirmed the row
            st.execute("delete from " + db.qualified(db.schema(), tables.outboxTable()) + " where step_key = 'P1:process-payment'");
        }
        try (Connection c = transaction()) {
            assertThat(outbox.send(c, message("P1", "process-payment"))).isTrue();
            c.commit();
        }
        assertThat(count("step_key = 'P1:process-payment'")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_payloadOverCap_isRejectedAndNothingWritten(TestDatabase db) throws Exception {
        on(db);
        OutboxMessage big = OutboxMessage.builder(StepKey.of("BIG", "s"), "payments").payload(new byte[1001]).build();
        try (Connection c = transaction()) {
            assertThatThrownBy(() -> outbox.send(c, big)).isInstanceOf(InvalidInputException.class)
                    .hasMessageContaining("payload of 1001 bytes").hasMessageContaining("cap of 1000");
        }
        assertThat(count("original_key = 'BIG'")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_recordExactlyAtTheCap_isAcceptedAndOneByteMoreIsRefused(TestDatabase db) throws Exception {
        on(db);
        IntFunction<OutboxMessage> withPayload = n -> OutboxMessage.builder(StepKey.of("CAP", "s"), "payments")
                .routingKey("k").contentType("application/json").header("x-tenant", "t1").payload(new byte[n]).build();
        int n = 0;
        while (withPayload.apply(n + 1).recordBytes() <= 1000) {
            n++;
        }
        OutboxMessage atCap = withPayload.apply(n);
        OutboxMessage overCap = OutboxMessage.builder(StepKey.of("CAP", "t"), "payments").routingKey("k")
                .contentType("application/json").header("x-tenant", "t1").payload(new byte[n + 1]).build();
        assertThat(atCap.recordBytes()).isEqualTo(1000);
        try (Connection c = transaction()) {
            assertThat(outbox.send(c, atCap)).isTrue();
            assertThatThrownBy(() -> outbox.send(c, overCap)).isInstanceOf(InvalidInputException.class)
                    .hasMessageContaining("is 1001 bytes as Kafka counts its record");
            c.commit();
        }
        assertThat(count("original_key like 'CAP%'")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_headersAndTraceContext_areStoredUtf8Safe(TestDatabase db) throws Exception {
        on(db);
        OutboxMessage m = OutboxMessage.builder(StepKey.of("H1", "s"), "payments").payload("x")
                .header("x-emoji", "\uD83D\uDE00 caf\u00e9").header("x-b", "2")
                .traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").tracestate("congo=t61rcWkgMzE")
                .build();
        try (Connection c = transaction()) {
            outbox.send(c, m);
            c.commit();
        }
        try (Connection c = db.connection();
                PreparedStatement ps = c.prepareStatement("select header_names, header_values, traceparent, tracestate from "
                        + db.qualified(db.schema(), tables.outboxTable()) + " where original_key = 'H1'")) {
            ResultSet rs = ps.executeQuery();
            rs.next();
            assertThat(strings(rs, 1)).containsExactly("x-emoji", "x-b");
            assertThat(strings(rs, 2)).containsExactly("\uD83D\uDE00 caf\u00e9", "2");
            assertThat(rs.getString(3)).isEqualTo("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
            assertThat(rs.getString(4)).isEqualTo("congo=t61rcWkgMzE");
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_withoutOpenTelemetryOnTheClasspath_sendsWithoutTraceContext(TestDatabase db) throws Exception {
        on(db);
        // this module's tests run without the optional OpenTelemetry API, as a service without it does
        assertThatThrownBy(() -> Class.forName("io.opentelemetry.context.Context")).isInstanceOf(ClassNotFoundException.class);
        assertThat(Tracing.available()).isFalse();
        try (Connection c = transaction()) {
            assertThat(outbox.send(c, message("N1", "s"))).isTrue();
            assertThat(outbox.sendAll(c, List.of(message("N2", "s")))).containsExactly(true);
            c.commit();
        }
        assertThat(count("original_key in ('N1', 'N2') and traceparent is null and tracestate is null")).isEqualTo(2);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_withDelay_isNotAvailableBeforeTheDatabaseClockPassesIt(TestDatabase db) throws Exception {
        on(db);
        OutboxMessage m = OutboxMessage.builder(StepKey.of("L1", "s"), "payments").payload("x").delay(Duration.ofHours(1)).build();
        Instant at = Instant.parse("2030-01-01T00:00:00Z");
        OutboxMessage m2 = OutboxMessage.builder(StepKey.of("L2", "s"), "payments").payload("x").availableAt(at).build();
        try (Connection c = transaction()) {
            outbox.send(c, m);
            outbox.send(c, m2);
            c.commit();
        }
        assertThat(count("original_key = 'L1' and available_at > now() + "
                + (postgres() ? "interval '59 minutes'" : "interval 59 minute"))).isEqualTo(1);
        assertThat(count("original_key = 'L2' and " + (postgres() ? "extract(epoch from available_at)" : "unix_timestamp(available_at)")
                + " = " + at.getEpochSecond())).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_withDelayLateInALongTransaction_countsTheDelayFromTheSendNotTheTransactionStart(TestDatabase db) throws Exception {
        on(db);
        OutboxMessage m = OutboxMessage.builder(StepKey.of("L3", "s"), "payments").payload("x").delay(Duration.ofSeconds(2)).build();
        try (Connection c = transaction(); Statement st = c.createStatement()) {
            st.execute(postgres() ? "select pg_sleep(2)" : "select sleep(2)"); // the transaction has been open 2 s when it sends
            String clock = postgres() ? "select extract(epoch from clock_timestamp())" : "select unix_timestamp(now(6))";
            Instant beforeSend = dbInstant(st, clock);
            outbox.send(c, m);
            Instant afterSend = dbInstant(st, clock);
            Instant availableAt = dbInstant(st, "select " + (postgres() ? "extract(epoch from available_at)" : "unix_timestamp(available_at)")
                    + " from " + db.qualified(db.schema(), tables.outboxTable()) + " where original_key = 'L3'");
            Instant txStart = postgres() ? dbInstant(st, "select extract(epoch from current_timestamp)") : null;
            c.commit();

            assertThat(availableAt).isAfterOrEqualTo(beforeSend.plusSeconds(2)).isBeforeOrEqualTo(afterSend.plusSeconds(2));
            if (txStart != null) { // MariaDB has no transaction-start clock: there the send's time is the only one
                assertThat(Duration.between(txStart, availableAt)).isGreaterThanOrEqualTo(Duration.ofSeconds(4));
            }
        }
    }

    /** Epoch seconds as the database returns them, as an instant. */
    private static Instant dbInstant(Statement st, String sql) throws Exception {
        try (ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            java.math.BigDecimal micros = rs.getBigDecimal(1).movePointRight(6).setScale(0, java.math.RoundingMode.HALF_UP);
            return Instant.EPOCH.plus(micros.longValueExact(), java.time.temporal.ChronoUnit.MICROS);
        }
    }

    /** A text[] column on PostgreSQL, a JSON array of strings on MariaDB. */
    private List<String> strings(ResultSet rs, int column) throws Exception {
        return postgres() ? List.of((String[]) rs.getArray(column).getArray()) : JsonStrings.decode(rs.getString(column));
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void sendAll_batch_reportsWhichWereEmitted(TestDatabase db) throws Exception {
        on(db);
        try (Connection c = transaction()) {
            outbox.send(c, message("B2", "s"));
            c.commit();
        }
        long b2 = id("B2:s");
        try (Connection c = transaction()) {
            List<Boolean> emitted = outbox.sendAll(c, List.of(message("B1", "s"), message("B2", "s"), message("B3", "s")));
            assertThat(emitted).containsExactly(true, false, true);
            c.commit();
        }
        // what the database holds: one row per step key, the earlier B2 row untouched and the
        // two new rows written in the batch's order
        assertThat(count("original_key IN ('B1', 'B2', 'B3')")).isEqualTo(3);
        assertThat(count("step_key = 'B2:s'")).isEqualTo(1);
        assertThat(id("B1:s")).isGreaterThan(id("B2:s")).isLessThan(id("B3:s"));
        assertThat(id("B2:s")).isEqualTo(b2);
    }

    private long id(String stepKey) throws Exception {
        try (Connection c = db.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select id from " + db.qualified(db.schema(), tables.outboxTable())
                        + " where step_key = '" + stepKey + "'")) {
            assertThat(rs.next()).as("row for %s", stepKey).isTrue();
            return rs.getLong(1);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void onSend_listenerRunsForEachSend_untilClosed(TestDatabase db) throws Exception {
        on(db);
        AtomicInteger calls = new AtomicInteger();
        AutoCloseable registration = outbox.onSend(calls::incrementAndGet);
        try (Connection c = transaction()) {
            outbox.send(c, message("W1", "s"));
            registration.close();
            outbox.send(c, message("W2", "s"));
            c.commit();
        }
        assertThat(calls).hasValue(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_autoCommitConnection_isRefusedNamingTheFixAndWritesNothing(TestDatabase db) throws Exception {
        on(db);
        try (Connection c = db.connection()) {
            assertThat(c.getAutoCommit()).isTrue();
            assertThatThrownBy(() -> outbox.send(c, message("AC1", "s")))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("outbox send of AC1:s").hasMessageContaining("auto-commit mode")
                    .hasMessageContaining("setAutoCommit(false)");
        }
        assertThat(count("original_key = 'AC1'")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void sendAll_autoCommitConnection_isRefusedNamingTheFixAndWritesNothing(TestDatabase db) throws Exception {
        on(db);
        try (Connection c = db.connection()) {
            assertThatThrownBy(() -> outbox.sendAll(c, List.of(message("AC3", "s"), message("AC4", "s"))))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("outbox sendAll").hasMessageContaining("setAutoCommit(false)");
        }
        assertThat(count("original_key in ('AC3', 'AC4')")).isZero();
    }

    /** A connection with auto-commit off: the caller's transaction. */
    private Connection transaction() throws Exception {
        Connection c = db.connection();
        c.setAutoCommit(false);
        return c;
    }

    private long count(String where) throws Exception {
        try (Connection c = db.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select count(*) from " + db.qualified(db.schema(), tables.outboxTable()) + " where " + where)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
