package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Retention: completed entries past the window go, in batches; everything else stays. */
class InboxRetentionIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    static TxboxTables tables;
    static Rows rows;

    @BeforeAll
    static void migrate() {
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        rows = new Rows(PG.dataSource(), tables);
    }

    @BeforeEach
    void empty() {
        rows.execute("delete from " + rows.inbox());
    }

    /** {@code n} entries of {@code consumer} in {@code status}, completed (if so) {@code ageDays} ago. */
    private static void seed(String consumer, String status, int n, int ageDays) {
        rows.execute("insert into " + rows.inbox() + " (consumer, message_key, status, attempts, received_at, "
                + "completed_at) select '" + consumer + "', '" + status + ageDays + "-' || g, '" + status + "', 1, "
                + "now() - interval '" + ageDays + " days', "
                + ("COMPLETED".equals(status) ? "now() - interval '" + ageDays + " days'" : "null")
                + " from generate_series(1, " + n + ") g");
    }

    private static Inbox inbox(String consumer, Clock clock) {
        return Inbox.builder(consumer).tables(tables).retention(Duration.ofDays(7)).clock(clock).build();
    }

    @Test
    void purgeCompleted_removesOnlyCompletedEntriesOlderThanWindow() {
        seed("shop", "COMPLETED", 30, 8);
        seed("shop", "COMPLETED", 20, 6);
        seed("shop", "FAILED", 5, 8);
        seed("shop", "DEAD", 5, 8);
        seed("shop", "PROCESSING", 5, 8);
        seed("shop@acme", "COMPLETED", 10, 8); // a tenant of the same consumer
        seed("shop-other", "COMPLETED", 10, 8); // another consumer with its own window

        int purged = inbox("shop", Clock.systemUTC()).purgeCompleted(PG.dataSource());

        assertThat(purged).isEqualTo(40);
        assertThat(rows.count("consumer like 'shop%' and status = 'COMPLETED' and completed_at < now() - interval '7 days'"
                + " and consumer <> 'shop-other'")).isZero();
        assertThat(rows.count("consumer = 'shop' and status = 'COMPLETED'")).isEqualTo(20);
        assertThat(rows.count("consumer = 'shop' and status <> 'COMPLETED'")).isEqualTo(15);
        assertThat(rows.count("consumer = 'shop-other'")).isEqualTo(10);
    }

    @Test
    void purgeCompleted_moreThanOneBatch_removesAllInBoundedBatches() {
        seed("bulk", "COMPLETED", 2500, 10);
        assertThat(inbox("bulk", Clock.systemUTC()).purgeCompleted(PG.dataSource())).isEqualTo(2500);
        assertThat(rows.count("consumer = 'bulk'")).isZero();
    }

    @Test
    void purgeCompleted_windowFollowsInjectedClock() {
        seed("clocked", "COMPLETED", 10, 1);
        assertThat(inbox("clocked", Clock.systemUTC()).purgeCompleted(PG.dataSource())).isZero();

        Clock weekLater = Clock.offset(Clock.systemUTC(), Duration.ofDays(7));
        assertThat(inbox("clocked", weekLater).purgeCompleted(PG.dataSource())).isEqualTo(10);
    }

    @Test
    void purgeCompleted_afterWindow_redeliveryIsFirstAgain() throws Exception {
        Inbox inbox = inbox("window", Clock.systemUTC());
        InboundMessage m = InboundMessage.of("once", new byte[] {1});
        inbox.process(PG.dataSource(), m, (tx, msg) -> null);
        assertThat(inbox.process(PG.dataSource(), m, (tx, msg) -> null).status()).isEqualTo(Outcome.Status.DUPLICATE);

        Inbox later = inbox("window", Clock.fixed(Instant.now().plus(Duration.ofDays(8)), ZoneOffset.UTC));
        assertThat(later.purgeCompleted(PG.dataSource())).isEqualTo(1);

        assertThat(inbox.process(PG.dataSource(), m, (tx, msg) -> null).status()).isEqualTo(Outcome.Status.PROCESSED);
    }

    @Test
    void retentionTask_purgesInBackgroundUntilClosed() {
        seed("task", "COMPLETED", 50, 8);
        try (RetentionTask task = inbox("task", Clock.systemUTC()).retentionTask(PG.dataSource(), Duration.ofMillis(50))) {
            await().atMost(Duration.ofSeconds(10)).until(() -> task.purged() == 50);
        }
        assertThat(rows.count("consumer = 'task'")).isZero();
    }

    @Test
    void purgeQuery_canUseThePartialCompletedIndex() throws Exception {
        List<String> plan = new ArrayList<>();
        try (Connection c = PG.dataSource().getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("set local enable_seqscan = off");
            try (ResultSet rs = s.executeQuery("explain select consumer, message_key from " + rows.inbox()
                    + " where status = 'COMPLETED' and completed_at < now() - interval '7 days' limit 1000")) {
                while (rs.next()) {
                    plan.add(rs.getString(1));
                }
            }
            c.rollback();
            c.setAutoCommit(true);
        }
        assertThat(String.join("\n", plan)).contains(tables.prefix() + "inbox_completed_ix");
    }
}
