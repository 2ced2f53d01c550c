package io.txbox.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * A Redis that stops answering for a while and then works off what it was sent meanwhile (a
 * private {@code redis-server} frozen with SIGSTOP): no effect doubles, and once it answers
 * again no key the database has completed is answered IN_FLIGHT.
 */
class HybridInboxStallIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(8);

    /** The database of the running test. */
    static TestDatabase current;

    /** The txbox tables in the running test's database. */
    static TxboxTables tables() {
        return TxboxTables.inSchema(current.schema());
    }
    static PrivateRedis redis;

    @BeforeAll
    static void start() throws Exception {
        for (TestDatabase d : DBS.all()) {
            TxboxMigrations.migrate(d.dataSource(), TxboxTables.inSchema(d.schema()));
            try (Connection c = d.dataSource().getConnection(); Statement s = c.createStatement()) {
                s.execute("create table effects (consumer text not null, message_key text not null)");
            }
        }
        redis = PrivateRedis.start();
    }

    @AfterAll
    static void stop() {
        if (redis != null) {
            redis.close();
        }
    }

    static Inbox database(String consumer) {
        return Inbox.builder(consumer).tables(tables()).build();
    }

    static Handler effect(String consumer) {
        return (tx, m) -> {
            try (PreparedStatement ps = tx.prepareStatement("insert into effects values (?, ?)")) {
                ps.setString(1, consumer);
                ps.setString(2, m.key());
                ps.executeUpdate();
            }
            return ("done " + m.key()).getBytes(UTF_8);
        };
    }

    static InboundMessage msg(String key) {
        return InboundMessage.of(key, key.getBytes(UTF_8));
    }

    /** Keys of {@code consumer} whose Redis entry is an in-flight marker. */
    static List<String> markers(String consumer, List<String> keys) {
        List<String> marked = new ArrayList<>();
        for (String k : keys) {
            if ("P".equals(redis.commands().hget("txbox:cache|" + consumer + "|k|" + k, "s"))) {
                marked.add(k);
            }
        }
        return marked;
    }

    static long effects(String consumer) throws Exception {
        try (Connection c = current.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("select count(*) from effects where consumer = ?")) {
            ps.setString(1, consumer);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_redisFrozenMidRun_noCompletedKeyIsAnsweredInFlightOnceRedisAnswersAgain(TestDatabase testDb) throws Exception {
        current = testDb;
        redis.commands().flushall(); // the private server still holds the other database's run
        String consumer = "stall";
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            keys.add("k" + i);
        }
        ExecutorService pool = Executors.newSingleThreadExecutor();
        CountDownLatch inHandler = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        Handler slow = (tx, m) -> {
            inHandler.countDown();
            if (!finish.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never let the held delivery finish");
            }
            return effect(consumer).handle(tx, m);
        };
        try (HybridInbox inbox = HybridInbox.builder(database(consumer)).redisUrl(redis.url())
                .commandTimeout(Duration.ofMillis(100)).failureThreshold(3).openFor(Duration.ofMinutes(1)).build()) {
            assertThat(inbox.process(current.dataSource(), msg("warm"), effect(consumer)).status())
                    .isEqualTo(Outcome.Status.PROCESSED);
            // "held" has set its marker and runs while Redis freezes: its cached result is written
            // while the breaker is open.
            Future<Outcome> held = pool.submit(() -> inbox.process(current.dataSource(), msg("held"), slow));
            assertThat(inHandler.await(10, TimeUnit.SECONDS)).isTrue();
            redis.freeze();
            try {
                for (String k : keys) {
                    assertThat(inbox.process(current.dataSource(), msg(k), effect(consumer)).status())
                            .isEqualTo(Outcome.Status.PROCESSED);
                }
                assertThat(inbox.breakerState()).isEqualTo(BreakerState.OPEN);
                finish.countDown();
                assertThat(held.get(10, TimeUnit.SECONDS).status()).isEqualTo(Outcome.Status.PROCESSED);
            } finally {
                finish.countDown();
                redis.thaw();
            }
        } finally {
            pool.shutdownNow();
        }
        // The commands sent while frozen have run once the server answers this connection.
        assertThat(redis.commands().ping()).isEqualTo("PONG");
        List<String> all = new ArrayList<>(keys);
        all.add("held");
        await("no completed key holds an in-flight marker").during(Duration.ofMillis(500))
                .atMost(Duration.ofSeconds(3)).pollInterval(Duration.ofMillis(50))
                .untilAsserted(() -> assertThat(markers(consumer, all)).as("keys answered IN_FLIGHT").isEmpty());

        try (HybridInbox fresh = HybridInbox.builder(database(consumer)).redisUrl(redis.url()).build()) {
            for (String k : all) {
                assertThat(fresh.process(current.dataSource(), msg(k), effect(consumer)).status()).as(k)
                        .isEqualTo(Outcome.Status.DUPLICATE);
            }
        }
        assertThat(effects(consumer)).isEqualTo(all.size() + 1);
    }

    @Test
    void process_connectionCutWhileADeliveryRuns_itsMarkerIsRemovedOnceRedisIsBack_withoutMoreDeliveries()
            throws Exception {
        String consumer = "cut";
        ExecutorService pool = Executors.newSingleThreadExecutor();
        CountDownLatch inHandler = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        Handler slow = (tx, m) -> {
            inHandler.countDown();
            if (!finish.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never let the held delivery finish");
            }
            return effect(consumer).handle(tx, m);
        };
        try (SeveringProxy proxy = new SeveringProxy("127.0.0.1", redis.port());
                HybridInbox inbox = HybridInbox.builder(database(consumer)).redisUrl(proxy.url())
                        .commandTimeout(Duration.ofMillis(200)).failureThreshold(1).openFor(Duration.ofMinutes(1))
                        .build()) {
            assertThat(inbox.process(current.dataSource(), msg("warm"), effect(consumer)).status())
                    .isEqualTo(Outcome.Status.PROCESSED);
            Future<Outcome> held = pool.submit(() -> inbox.process(current.dataSource(), msg("held"), slow));
            assertThat(inHandler.await(10, TimeUnit.SECONDS)).isTrue();
            proxy.sever();
            // the breaker opens: the held delivery's result is written while it is open
            assertThat(inbox.process(current.dataSource(), msg("other"), effect(consumer)).status())
                    .isEqualTo(Outcome.Status.PROCESSED);
            assertThat(inbox.breakerState()).isEqualTo(BreakerState.OPEN);
            finish.countDown();
            assertThat(held.get(10, TimeUnit.SECONDS).status()).isEqualTo(Outcome.Status.PROCESSED);
            assertThat(markers(consumer, List.of("held"))).as("the cached result could not be written").hasSize(1);

            proxy.restore();
            await("the marker of a completed key is removed once Redis is reachable again")
                    .atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                    .untilAsserted(() -> assertThat(markers(consumer, List.of("held"))).isEmpty());
        } finally {
            finish.countDown();
            pool.shutdownNow();
        }
        try (HybridInbox fresh = HybridInbox.builder(database(consumer)).redisUrl(redis.url()).build()) {
            assertThat(fresh.process(current.dataSource(), msg("held"), effect(consumer)).status())
                    .isEqualTo(Outcome.Status.DUPLICATE);
        }
        assertThat(effects(consumer)).isEqualTo(3);
    }
}
