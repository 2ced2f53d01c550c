package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Retention: completed entries past the window go, in batches; everything else stays. */
class InboxRetentionIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    private TestDatabase db;
    private Rows rows;

    private void use(TestDatabase db) {
        this.db = db;
        rows = Rows.of(db);
        rows.execute("delete from " + rows.inbox());
    }

    /** {@code n} entries of {@code consumer} in {@code status}, completed (if so) {@code ageDays} ago. */
    private void seed(String consumer, String status, int n, int ageDays) throws SQLException {
        String ago = rows.ago(ageDays, "day");
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("insert into " + rows.inbox()
                        + " (consumer, message_key, status, attempts, received_at, completed_at) values (?, ?, ?, 1, "
                        + ago + ", " + ("COMPLETED".equals(status) ? ago : "null") + ")")) {
            for (int i = 1; i <= n; i++) {
                ps.setString(1, consumer);
                ps.setString(2, status + ageDays + "-" + i);
                ps.setString(3, status);
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    private Inbox inbox(String consumer, Clock clock) {
        return Inbox.builder(consumer).tables(rows.tables).retention(Duration.ofDays(7)).clock(clock).build();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void purgeCompleted_removesOnlyCompletedEntriesOlderThanWindow(TestDatabase db) throws SQLException {
        use(db);
        seed("shop", "COMPLETED", 30, 8);
        seed("shop", "COMPLETED", 20, 6);
        seed("shop", "FAILED", 5, 8);
        seed("shop", "DEAD", 5, 8);
        seed("shop", "PROCESSING", 5, 8);
        seed("shop@acme", "COMPLETED", 10, 8); // a tenant of the same consumer
        seed("shop-other", "COMPLETED", 10, 8); // another consumer with its own window

        int purged = inbox("shop", Clock.systemUTC()).purgeCompleted(db.dataSource());

        assertThat(purged).isEqualTo(40);
        assertThat(rows.count("consumer like 'shop%' and status = 'COMPLETED' and completed_at < " + rows.ago(7, "day")
                + " and consumer <> 'shop-other'")).isZero();
        assertThat(rows.count("consumer = 'shop' and status = 'COMPLETED'")).isEqualTo(20);
        assertThat(rows.count("consumer = 'shop' and status <> 'COMPLETED'")).isEqualTo(15);
        assertThat(rows.count("consumer = 'shop-other'")).isEqualTo(10);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void purgeCompleted_moreThanOneBatch_removesAllInBoundedBatches(TestDatabase db) throws SQLException {
        use(db);
        seed("bulk", "COMPLETED", 2500, 10);
        assertThat(inbox("bulk", Clock.systemUTC()).purgeCompleted(db.dataSource())).isEqualTo(2500);
        assertThat(rows.count("consumer = 'bulk'")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void purgeCompleted_windowFollowsInjectedClock(TestDatabase db) throws SQLException {
        use(db);
        seed("clocked", "COMPLETED", 10, 1);
        assertThat(inbox("clocked", Clock.systemUTC()).purgeCompleted(db.dataSource())).isZero();

        Clock weekLater = Clock.offset(Clock.systemUTC(), Duration.ofDays(7));
        assertThat(inbox("clocked", weekLater).purgeCompleted(db.dataSource())).isEqualTo(10);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void purgeCompleted_afterWindow_redeliveryIsFirstAgain(TestDatabase db) throws Exception {
        use(db);
        Inbox inbox = inbox("window", Clock.systemUTC());
        InboundMessage m = InboundMessage.of("once", new byte[] {1});
        inbox.process(db.dataSource(), m, (tx, msg) -> null);
        assertThat(inbox.process(db.dataSource(), m, (tx, msg) -> null).status()).isEqualTo(Outcome.Status.DUPLICATE);

        Inbox later = inbox("window", Clock.fixed(Instant.now().plus(Duration.ofDays(8)), ZoneOffset.UTC));
        assertThat(later.purgeCompleted(db.dataSource())).isEqualTo(1);

        assertThat(inbox.process(db.dataSource(), m, (tx, msg) -> null).status()).isEqualTo(Outcome.Status.PROCESSED);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void retentionTask_purgesInBackgroundUntilClosed(TestDatabase db) throws SQLException {
        use(db);
        seed("task", "COMPLETED", 50, 8);
        try (RetentionTask task = inbox("task", Clock.systemUTC()).retentionTask(db.dataSource(), Duration.ofMillis(50))) {
            await().atMost(Duration.ofSeconds(10)).until(() -> task.purged() == 50);
        }
        assertThat(rows.count("consumer = 'task'")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void purgeQuery_canUseTheCompletedIndex(TestDatabase db) throws Exception {
        use(db);
        List<String> plan = new ArrayList<>();
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            String explain;
            if (rows.postgres()) {
                s.execute("set local enable_seqscan = off");
                explain = "explain select consumer, message_key from " + rows.inbox()
                        + " where status = 'COMPLETED' and completed_at < now() - interval '7 days' limit 1000";
            } else {
                explain = "explain delete from " + rows.inbox() + " where status = 'COMPLETED' and completed_at < "
                        + rows.ago(7, "day") + " order by completed_at limit 1000";
            }
            try (ResultSet rs = s.executeQuery(explain)) {
                while (rs.next()) {
                    plan.add(rows.postgres() ? rs.getString(1) : rs.getString("possible_keys"));
                }
            }
            c.rollback();
            c.setAutoCommit(true);
        }
        assertThat(String.join("\n", plan)).contains(rows.tables.prefix() + "inbox_completed_ix");
    }
}
