package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.internal.WakeChannel;
import io.txbox.outbox.Outbox;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A relay on PostgreSQL listens for the sends of outboxes it is not wired to (another process's):
 * an idle relay whose poll is a minute away publishes a sent row within seconds, and keeps doing
 * so after its listening connection is killed. PostgreSQL only: the wake-up rides on its
 * NOTIFY/LISTEN, which MariaDB does not have (a relay there polls).
 */
class RelayWakeUpIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    static Db db;
    /** The sender: another outbox instance on the same tables, so nothing in this JVM wakes the relay directly. */
    static Outbox sender;

    @BeforeAll
    static void setUp() {
        db = new Db(PG.dataSource(), PG.schema());
        sender = Outbox.builder().tables(db.tables).build();
    }

    Relay idleRelay(String topic) {
        KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers(KAFKA.bootstrapServers()).build();
        // one worker, a 1 min poll and a lease whose renewals are 10 min apart: only a wake-up makes it look sooner
        return Relay.builder().dataSource(db.ds).tables(db.tables).route("orders", kafka.topic(topic)).workers(1)
                .pollInterval(Duration.ofMinutes(1)).laneLease(Duration.ofHours(1)).build();
    }

    void send(String key) throws SQLException {
        try (Connection c = db.ds.getConnection()) {
            c.setAutoCommit(false);
            sender.send(c, Db.message(key, "orders", "k", key));
            c.commit();
        }
    }

    /** The backend pids of connections listening on this schema's outbox channel. */
    static List<Integer> listeners() throws SQLException {
        try (Connection c = PG.adminDataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT pid FROM pg_stat_activity WHERE query = ?")) {
            ps.setString(1, WakeChannel.listenSql(db.tables));
            List<Integer> pids = new java.util.ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    pids.add(rs.getInt(1));
                }
            }
            return pids;
        }
    }

    @Test
    void send_toAnIdleRelay_isPublishedLongBeforeItsPoll_andAgainAfterTheListenerIsKilled() throws Exception {
        String topic = KAFKA.uniqueTopic("wake");
        KAFKA.createTopic(topic, 1);
        try (Relay relay = idleRelay(topic); Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic)) {
            relay.start();
            await().atMost(Duration.ofSeconds(10)).until(() -> relay.status().ownedLanes() == 64 && listeners().size() == 1);
            // one after another: each is claimed after its own wake-up, not by a rebalance or poll
            for (int i = 0; i < 20; i++) {
                send("idle-" + i);
                consumed.awaitStepKeys(i + 1, Duration.ofSeconds(10));
            }

            int killed = listeners().get(0);
            try (Connection c = PG.adminDataSource().getConnection();
                    PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
                ps.setInt(1, killed);
                ps.executeQuery().close();
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                List<Integer> now = listeners();
                return now.size() == 1 && now.get(0) != killed;
            });
            send("after-reconnect");
            consumed.awaitStepKeys(21, Duration.ofSeconds(10));
            assertThat(consumed.stepKeys()).contains("after-reconnect:step", "idle-19:step");
        }
    }
}
