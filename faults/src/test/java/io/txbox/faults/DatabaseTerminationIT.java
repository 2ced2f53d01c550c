package io.txbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.RetryableException;
import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestPostgres;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * The database connection lost in the middle of a handler, while COMMIT runs or is on its way to
 * the server, and after COMMIT succeeded but before its reply arrived. The delivery is retried as a broker would redeliver it,
 * and the key settles what happened: exactly one business effect every time.
 */
class DatabaseTerminationIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    private static TxboxTables tables(TestDatabase db) {
        return Effects.migrated(db);
    }

    private static Inbox inbox(TestDatabase db, String name) {
        return Inbox.builder(name).tables(tables(db)).build();
    }

    private static InboundMessage message(String key) {
        return InboundMessage.of(key, ("{\"key\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8));
    }

    /** Runs a delivery; a {@link RetryableException} comes back as the string RETRYABLE, an outcome as its status. */
    private static String attempt(Supplier<Outcome> delivery) {
        try {
            return delivery.get().status().name();
        } catch (RetryableException e) {
            return "RETRYABLE";
        }
    }

    private static long entries(TestDatabase db, Effects effects, String consumer, String key) {
        return effects.queryLong("SELECT count(*) FROM " + db.qualified(db.schema(), tables(db).inboxTable())
                + " WHERE consumer = '" + consumer + "' AND message_key = '" + key + "'");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_backendTerminatedMidHandler_nothingCommittedAndRedeliveryAppliesOnce(TestDatabase db) throws Exception {
        String name = "term-mid-handler";
        String key = "order-1:pay";
        Inbox inbox = inbox(db, name);
        Effects effects = new Effects(db.dataSource());
        FaultSql sql = FaultSql.of(db);
        AtomicInteger runs = new AtomicInteger();
        Handler handler = (tx, m) -> {
            Effects.apply(tx, name, m.key());
            if (runs.incrementAndGet() == 1) {
                try (Statement s = tx.createStatement()) {
                    s.execute(sql.sleep(30, "mid-handler"));
                }
            }
            return null;
        };
        try (HikariDataSource ds = Pools.pool(db, name, 3)) {
            CompletableFuture<String> first = CompletableFuture.supplyAsync(
                    () -> attempt(() -> inbox.process(ds, message(key), handler)));
            sql.killWhen(db, name, "mid-handler", Duration.ofSeconds(20));
            // not committed: the broker redelivers (RETRYABLE), or the failure was counted (FAILED)
            assertThat(first.get(30, TimeUnit.SECONDS)).isIn("RETRYABLE", "FAILED");
            assertThat(effects.count(name, key)).isZero();

            assertThat(inbox.process(ds, message(key), handler).status()).isEqualTo(Outcome.Status.PROCESSED);
            assertThat(inbox.process(ds, message(key), handler).status()).isEqualTo(Outcome.Status.DUPLICATE);
        }
        assertThat(runs).hasValue(2);
        assertThat(effects.count(name, key)).isEqualTo(1);
    }

    // PostgreSQL only: MariaDB has no deferred triggers, and only a server-wide lock could hold one session's COMMIT;
    // the COMMIT lost on its way to the server (next test) is the fault both databases share
    @Test
    void process_backendTerminatedWhileCommitRuns_rolledBackAndRedeliveryAppliesOnce() throws Exception {
        TestPostgres db = DBS.postgres();
        String name = "term-in-commit";
        String key = "order-2:pay";
        Inbox inbox = inbox(db, name);
        Effects effects = new Effects(db.dataSource());
        // A deferred trigger runs inside COMMIT: for a key listed in commit_stall it sleeps, so
        // the COMMIT is still running when the test terminates the backend.
        effects.exec("CREATE TABLE commit_stall (key text PRIMARY KEY)");
        effects.exec("CREATE FUNCTION stall_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                + " IF EXISTS (SELECT 1 FROM commit_stall s WHERE s.key = NEW.message_key) THEN PERFORM pg_sleep(30); END IF;"
                + " RETURN NULL; END $$");
        effects.exec("CREATE CONSTRAINT TRIGGER stall_commit AFTER INSERT ON effects DEFERRABLE INITIALLY DEFERRED"
                + " FOR EACH ROW EXECUTE FUNCTION stall_commit()");
        effects.exec("INSERT INTO commit_stall VALUES ('" + key + "')");
        AtomicInteger runs = new AtomicInteger();
        Handler handler = (tx, m) -> {
            runs.incrementAndGet();
            Effects.apply(tx, name, m.key());
            return null;
        };
        try (HikariDataSource ds = Pools.pool(db, name, 3)) {
            CompletableFuture<String> first = CompletableFuture.supplyAsync(
                    () -> attempt(() -> inbox.process(ds, message(key), handler)));
            FaultSql.of(db).killWhen(db, name, "COMMIT", Duration.ofSeconds(20));
            // the client cannot know whether COMMIT happened; it did not, and the key shows it
            assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo("RETRYABLE");
            assertThat(effects.count(name, key)).isZero();
            assertThat(entries(db, effects, name, key)).isZero();

            effects.exec("DELETE FROM commit_stall WHERE key = '" + key + "'");
            assertThat(inbox.process(ds, message(key), handler).status()).isEqualTo(Outcome.Status.PROCESSED);
            assertThat(inbox.process(ds, message(key), handler).status()).isEqualTo(Outcome.Status.DUPLICATE);
        }
        assertThat(runs).hasValue(2);
        assertThat(effects.count(name, key)).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_connectionLostWhileCommitSent_rolledBackAndRedeliveryAppliesOnce(TestDatabase db) throws Exception {
        String name = "lost-commit-request";
        String key = "order-4:pay";
        AtomicInteger runs = new AtomicInteger();
        Inbox inbox = inbox(db, name);
        Effects effects = new Effects(db.dataSource());
        try (Proxied p = proxied(db, name)) {
            CuttingProxy proxy = p.proxy();
            HikariDataSource ds = p.ds();
            Handler handler = (tx, m) -> {
                Effects.apply(tx, name, m.key());
                if (runs.incrementAndGet() == 1) {
                    proxy.cutOnNextRequestContaining("COMMIT"); // the server never sees this delivery's COMMIT
                }
                return null;
            };
            // the client cannot know whether COMMIT happened; it did not, and the key shows it
            assertThat(attempt(() -> inbox.process(ds, message(key), handler))).isEqualTo("RETRYABLE");
            assertThat(proxy.cuts()).isEqualTo(1);
            assertThat(effects.count(name, key)).isZero();
            assertThat(entries(db, effects, name, key)).isZero();

            assertThat(inbox.process(ds, message(key), handler).status()).isEqualTo(Outcome.Status.PROCESSED);
            assertThat(inbox.process(ds, message(key), handler).status()).isEqualTo(Outcome.Status.DUPLICATE);
        }
        assertThat(runs).hasValue(2);
        assertThat(effects.count(name, key)).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void process_commitSucceededButReplyLost_outcomeUnknown_keySettlesItAsDuplicate(TestDatabase db) throws Exception {
        String name = "lost-commit-reply";
        String key = "order-3:pay";
        AtomicInteger runs = new AtomicInteger();
        Inbox inbox = inbox(db, name);
        Effects effects = new Effects(db.dataSource());
        try (Proxied p = proxied(db, name)) {
            CuttingProxy proxy = p.proxy();
            HikariDataSource ds = p.ds();
            Handler handler = (tx, m) -> {
                Effects.apply(tx, name, m.key());
                if (runs.incrementAndGet() == 1) {
                    proxy.cutOnNextReply(); // the next thing the server says is COMMIT's reply
                }
                return null;
            };
            assertThat(attempt(() -> inbox.process(ds, message(key), handler))).isEqualTo("RETRYABLE");
            assertThat(proxy.cuts()).isEqualTo(1);
            // the commit did happen, although the client was told the connection broke
            assertThat(effects.count(name, key)).isEqualTo(1);

            Outcome redelivery = inbox.process(ds, message(key), handler);
            assertThat(redelivery.status()).isEqualTo(Outcome.Status.DUPLICATE);
        }
        assertThat(runs).hasValue(1);
        assertThat(effects.count(name, key)).isEqualTo(1);
    }

    /** A pool of {@code db}'s connections through a proxy that can cut them. */
    private static Proxied proxied(TestDatabase db, String name) throws IOException {
        CuttingProxy proxy = new CuttingProxy(Backends.host(db.jdbcUrl()), Backends.port(db.jdbcUrl()));
        return new Proxied(proxy, Pools.pool(Backends.viaPort(db.jdbcUrl(), proxy.port()), db.user(), db.password(),
                name, 2, Duration.ofSeconds(10), null));
    }

    private record Proxied(CuttingProxy proxy, HikariDataSource ds) implements AutoCloseable {
        @Override
        public void close() throws IOException {
            ds.close();
            proxy.close();
        }
    }
}
