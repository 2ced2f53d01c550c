package io.txbox.inbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two-phase mode: claims with leases in database time, takeover after expiry, and fencing so
 * a worker that lost its lease writes nothing.
 */
class InboxTwoPhaseIT {
    private static final Duration SHORT_LEASE = Duration.ofMillis(300);

    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    private TestDatabase db;
    private Rows rows;
    /** Leases of 30 s: they never run out during a test. */
    private Inbox longLease;
    /**
     * Leases of 300 ms, and a JVM clock stuck in 1970: leases follow the database clock, so
     * the broken JVM clock must not matter.
     */
    private Inbox shortLease;

    private void use(TestDatabase db) {
        this.db = db;
        rows = Rows.of(db);
        rows.execute("create table if not exists " + rows.table("business") + " (message_key " + rows.text()
                + " not null)");
        longLease = Inbox.builder("gateway").tables(rows.tables).maxAttempts(3).build();
        shortLease = Inbox.builder("gateway-short").tables(rows.tables).maxAttempts(3).lease(SHORT_LEASE)
                .clock(Clock.fixed(Instant.EPOCH, ZoneOffset.UTC)).build();
    }

    private static InboundMessage msg(String key) {
        return InboundMessage.of(key, ("charge " + key).getBytes(UTF_8));
    }

    private Instant dbNow() {
        return rows.dbNow();
    }

    /** Polls the database clock, not the JVM's, until it has passed the claim's lease. */
    private void awaitLeaseExpired(Claim claim) {
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(25))
                .until(() -> dbNow().isAfter(claim.leaseUntil()));
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void claim_firstTime_acquiresTokenOneWithLeaseMeasuredByDatabaseClock(TestDatabase db) {
        use(db);
        Instant before = dbNow();
        Claim claim = shortLease.claim(db.dataSource(), msg("c-first"));
        Instant after = dbNow();

        assertThat(claim.status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(claim.fencingToken()).isEqualTo(1);
        assertThat(claim.leaseUntil()).isBetween(before.plus(SHORT_LEASE), after.plus(SHORT_LEASE));
        assertThat(rows.status("gateway-short", "c-first")).isEqualTo("PROCESSING");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void claim_whileLeaseHolds_reportsInFlight(TestDatabase db) {
        use(db);
        longLease.claim(db.dataSource(), msg("c-busy"));
        Claim second = longLease.claim(db.dataSource(), msg("c-busy"));
        assertThat(second.status()).isEqualTo(Claim.Status.IN_FLIGHT);
        assertThat(second.acquired()).isFalse();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void complete_thenClaimAgain_reportsDuplicateWithStoredResult(TestDatabase db) {
        use(db);
        Claim claim = longLease.claim(db.dataSource(), msg("c-done"));
        longLease.complete(db.dataSource(), claim, "txn-42".getBytes(UTF_8));

        Claim again = longLease.claim(db.dataSource(), msg("c-done"));

        assertThat(again.status()).isEqualTo(Claim.Status.DUPLICATE);
        assertThat(again.result()).asString(UTF_8).isEqualTo("txn-42");
        assertThat(rows.status("gateway", "c-done")).isEqualTo("COMPLETED");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void claim_afterLeaseExpires_takesOverAndFencesTheOldWorker(TestDatabase db) {
        use(db);
        // A lease no loaded machine outlives between two statements, so "still in flight" is
        // certain; the worker's pause past it is then played out in database time.
        Claim old = longLease.claim(db.dataSource(), msg("c-takeover"));
        assertThat(longLease.claim(db.dataSource(), msg("c-takeover")).status()).isEqualTo(Claim.Status.IN_FLIGHT);
        expireLeaseInDatabase("gateway", "c-takeover");
        assertThat(dbNow()).isAfter(rows.timestamp("gateway", "c-takeover", "lease_until"));

        Claim taken = longLease.claim(db.dataSource(), msg("c-takeover"));
        assertThat(taken.status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(taken.fencingToken()).isEqualTo(2);

        assertThatThrownBy(() -> longLease.complete(db.dataSource(), old, "late".getBytes(UTF_8)))
                .isInstanceOf(LeaseLostException.class).hasMessageContaining("fencing token 1");
        assertThatThrownBy(() -> longLease.fail(db.dataSource(), old, new RuntimeException("late")))
                .isInstanceOf(LeaseLostException.class);
        assertThatThrownBy(() -> longLease.release(db.dataSource(), old)).isInstanceOf(LeaseLostException.class);
        assertThat(rows.status("gateway", "c-takeover")).isEqualTo("PROCESSING");
        assertThat(rows.string("select result from " + rows.inbox() + " where message_key = 'c-takeover'")).isNull();

        longLease.complete(db.dataSource(), taken, "new owner".getBytes(UTF_8));
        assertThat(longLease.claim(db.dataSource(), msg("c-takeover")).result()).asString(UTF_8)
                .isEqualTo("new owner");
    }

    /** The holder of the lease stalled past it: its lease ends a moment ago, in database time. */
    private void expireLeaseInDatabase(String consumer, String key) {
        rows.execute("update " + rows.inbox() + " set lease_until = " + rows.ago(1000, "microsecond")
                + " where consumer = '" + consumer + "' and message_key = '" + key + "'");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void complete_inCallersTransaction_commitsWithBusinessWrites(TestDatabase db) throws SQLException {
        use(db);
        Claim claim = longLease.claim(db.dataSource(), msg("c-tx"));
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            insertBusiness(c, "c-tx");
            longLease.complete(c, claim, "in tx".getBytes(UTF_8));
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(rows.status("gateway", "c-tx")).isEqualTo("COMPLETED");
        assertThat(businessRows("c-tx")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void complete_inCallersTransactionOnAutoCommitConnection_isRefusedNamingTheFixAndWritesNothing(TestDatabase db)
            throws SQLException {
        use(db);
        Claim claim = longLease.claim(db.dataSource(), msg("c-tx-auto"));
        try (Connection c = db.dataSource().getConnection()) {
            assertThat(c.getAutoCommit()).isTrue();
            assertThatThrownBy(() -> longLease.complete(c, claim, "auto".getBytes(UTF_8)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("inbox complete")
                    .hasMessageContaining("auto-commit mode").hasMessageContaining("setAutoCommit(false)");
            assertThatThrownBy(() -> longLease.complete(c, claim, 201, java.util.Map.of(), "auto".getBytes(UTF_8)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("setAutoCommit(false)");
        }
        assertThat(rows.status("gateway", "c-tx-auto")).isEqualTo("PROCESSING");
        assertThat(rows.string("select result from " + rows.inbox() + " where message_key = 'c-tx-auto'")).isNull();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void complete_inCallersTransactionAfterTakeover_throwsAndRollbackDiscardsBusinessWrites(TestDatabase db) throws SQLException {
        use(db);
        Claim old = shortLease.claim(db.dataSource(), msg("c-tx-lost"));
        awaitLeaseExpired(old);
        shortLease.claim(db.dataSource(), msg("c-tx-lost"));

        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            insertBusiness(c, "c-tx-lost");
            assertThatThrownBy(() -> shortLease.complete(c, old, "late".getBytes(UTF_8)))
                    .isInstanceOf(LeaseLostException.class);
            c.rollback();
            c.setAutoCommit(true);
        }
        assertThat(businessRows("c-tx-lost")).isZero();
        assertThat(rows.status("gateway-short", "c-tx-lost")).isEqualTo("PROCESSING");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void fail_thenClaim_runsAgainWithNextTokenAndDeadAtMaxAttempts(TestDatabase db) {
        use(db);
        InboundMessage m = msg("c-fail");
        Claim first = longLease.claim(db.dataSource(), m);
        assertThat(longLease.fail(db.dataSource(), first, new RuntimeException("503 from gateway")).status())
                .isEqualTo(Outcome.Status.FAILED);
        Claim second = longLease.claim(db.dataSource(), m);
        assertThat(second.fencingToken()).isEqualTo(2);
        longLease.fail(db.dataSource(), second, new RuntimeException("503 again"));
        Claim third = longLease.claim(db.dataSource(), m);
        Outcome last = longLease.fail(db.dataSource(), third, new RuntimeException("card blocked"));

        assertThat(last.status()).isEqualTo(Outcome.Status.DEAD);
        Claim after = longLease.claim(db.dataSource(), m);
        assertThat(after.status()).isEqualTo(Claim.Status.DEAD);
        assertThat(after.reason()).contains("card blocked");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void claim_workerKeepsCrashing_leaseTakeoverStopsAtMaxAttemptsWithDead(TestDatabase db) {
        use(db);
        InboundMessage m = msg("c-crash");
        Claim claim = shortLease.claim(db.dataSource(), m);
        for (int i = 2; i <= 3; i++) {
            awaitLeaseExpired(claim);
            claim = shortLease.claim(db.dataSource(), m);
            assertThat(claim.fencingToken()).isEqualTo(i);
        }
        awaitLeaseExpired(claim);

        Claim parked = shortLease.claim(db.dataSource(), m);

        assertThat(parked.status()).isEqualTo(Claim.Status.DEAD);
        assertThat(parked.reason()).contains("lease expired on attempt 3, failure 3 of 3");
        assertThat(shortLease.listDead(db.dataSource(), 10)).extracting(DeadEntry::key).contains("c-crash");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void resetDead_thenClaim_acquiresAndAZombieFromBeforeTheResetStaysFenced(TestDatabase db) {
        use(db);
        InboundMessage m = msg("c-zombie");
        Claim zombie = shortLease.claim(db.dataSource(), m);
        for (int i = 2; i <= 3; i++) {
            awaitLeaseExpired(zombie);
            zombie = shortLease.claim(db.dataSource(), m);
        }
        assertThat(zombie.fencingToken()).isEqualTo(3);
        awaitLeaseExpired(zombie);
        assertThat(shortLease.claim(db.dataSource(), m).status()).isEqualTo(Claim.Status.DEAD);
        assertThat(shortLease.resetDead(db.dataSource(), "c-zombie")).isTrue();

        // After the reset the attempt count starts again, so a new owner reaches token 3 too.
        Claim fresh = shortLease.claim(db.dataSource(), m);
        assertThat(fresh.fencingToken()).isEqualTo(1);
        for (int i = 2; i <= 3; i++) {
            awaitLeaseExpired(fresh);
            fresh = shortLease.claim(db.dataSource(), m);
        }
        assertThat(fresh.status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(fresh.fencingToken()).isEqualTo(zombie.fencingToken());

        Claim late = zombie;
        assertThatThrownBy(() -> shortLease.complete(db.dataSource(), late, "zombie".getBytes(UTF_8)))
                .isInstanceOf(LeaseLostException.class);
        shortLease.complete(db.dataSource(), fresh, "after reset".getBytes(UTF_8));
        assertThat(shortLease.claim(db.dataSource(), m).result()).asString(UTF_8).isEqualTo("after reset");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void release_thenClaim_acquiresAgainAtOnce(TestDatabase db) {
        use(db);
        Claim claim = longLease.claim(db.dataSource(), msg("c-release"));
        longLease.release(db.dataSource(), claim);
        Claim again = longLease.claim(db.dataSource(), msg("c-release"));
        assertThat(again.status()).isEqualTo(Claim.Status.ACQUIRED);
        assertThat(again.fencingToken()).isEqualTo(2);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void release_doesNotCountTowardMaxAttempts_onlyFailuresMakeDead(TestDatabase db) {
        use(db);
        Inbox twoFailures = Inbox.builder("gateway-two").tables(rows.tables).maxAttempts(2).build();
        InboundMessage m = msg("c-release-rounds");
        for (int round = 1; round <= 3; round++) {
            Claim claim = twoFailures.claim(db.dataSource(), m);
            assertThat(claim.status()).isEqualTo(Claim.Status.ACQUIRED);
            twoFailures.release(db.dataSource(), claim);
        }
        Outcome firstFailure = twoFailures.fail(db.dataSource(), twoFailures.claim(db.dataSource(), m),
                new RuntimeException("503 from gateway"));

        assertThat(firstFailure.status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(firstFailure.attempts()).isEqualTo(4);
        assertThat(rows.status("gateway-two", "c-release-rounds")).isEqualTo("FAILED");

        Outcome secondFailure = twoFailures.fail(db.dataSource(), twoFailures.claim(db.dataSource(), m),
                new RuntimeException("card blocked"));
        assertThat(secondFailure.status()).isEqualTo(Outcome.Status.DEAD);
        assertThat(twoFailures.claim(db.dataSource(), m).status()).isEqualTo(Claim.Status.DEAD);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void claim_sameKeyDifferentPayload_throwsKeyReuse(TestDatabase db) {
        use(db);
        longLease.claim(db.dataSource(), msg("c-reuse"));
        assertThatThrownBy(() -> longLease.claim(db.dataSource(), InboundMessage.of("c-reuse", new byte[] {9})))
                .isInstanceOf(KeyReuseException.class);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void complete_notAcquiredClaim_isRefused(TestDatabase db) {
        use(db);
        longLease.claim(db.dataSource(), msg("c-inflight"));
        Claim inFlight = longLease.claim(db.dataSource(), msg("c-inflight"));
        assertThatThrownBy(() -> longLease.complete(db.dataSource(), inFlight, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("IN_FLIGHT");
    }

    private void insertBusiness(Connection c, String key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("insert into " + rows.table("business") + " values (?)")) {
            ps.setString(1, key);
            ps.executeUpdate();
        }
    }

    private long businessRows(String key) {
        return rows.queryLong("select count(*) from " + rows.table("business") + " where message_key = '" + key + "'");
    }
}
