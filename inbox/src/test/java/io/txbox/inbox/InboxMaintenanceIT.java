package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/** The operator calls of the admin CLI's {@code inbox purge}, on each database. */
class InboxMaintenanceIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    /** {@code n} COMPLETED entries of {@code consumer}, completed {@code ageDays} ago, and one DEAD. */
    private static void seed(Rows rows, String consumer, int n, int ageDays) throws SQLException {
        String ago = rows.ago(ageDays, "day");
        try (Connection c = rows.db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("insert into " + rows.inbox()
                        + " (consumer, message_key, status, attempts, received_at, completed_at) values (?, ?, ?, 1, "
                        + ago + ", " + ago + ")")) {
            for (int i = 0; i <= n; i++) {
                ps.setString(1, consumer);
                ps.setString(2, "k" + i);
                ps.setString(3, i == n ? "DEAD" : "COMPLETED");
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void purgeCompleted_everyConsumer_deletesOldCompletedEntriesWithTenantsAndKeepsTheRest(TestDatabase db)
            throws SQLException {
        Rows rows = Rows.of(db);
        seed(rows, "shop", 1500, 10);
        seed(rows, "shop@acme", 20, 10);
        seed(rows, "billing", 30, 10);
        seed(rows, "fresh", 5, 1);
        InboxMaintenance inboxes = InboxMaintenance.of(db.dataSource(), rows.tables);

        assertThat(inboxes.countCompleted(Duration.ofDays(7), "shop")).isEqualTo(1520);
        assertThat(inboxes.countCompleted(Duration.ofDays(7), null)).isEqualTo(1550);
        assertThat(inboxes.countDead()).isEqualTo(4);

        assertThat(inboxes.purgeCompleted(Duration.ofDays(7), "shop")).isEqualTo(1520);
        assertThat(rows.count("consumer like 'shop%' and status = 'COMPLETED'")).isZero();
        assertThat(rows.count("consumer = 'billing' and status = 'COMPLETED'")).isEqualTo(30);

        assertThat(inboxes.purgeCompleted(Duration.ofDays(7), null)).isEqualTo(30);
        assertThat(rows.count("status = 'COMPLETED'")).isEqualTo(5);
        assertThat(inboxes.countDead()).isEqualTo(4);

        InboxMaintenance later = InboxMaintenance.of(db.dataSource(), rows.tables,
                Clock.fixed(Instant.now().plus(Duration.ofDays(7)), ZoneOffset.UTC));
        assertThat(later.purgeCompleted(Duration.ofDays(7), null)).isEqualTo(5);
        assertThat(rows.count("1 = 1")).isEqualTo(4);
    }
}
