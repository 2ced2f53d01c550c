package io.txbox.relay;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What a NOTIFY trigger on the outbox costs the sender: one-message transactions (send + commit)
 * per second with and without {@code AFTER INSERT FOR EACH STATEMENT ... pg_notify}, at 1 and 4
 * sending threads.
 *
 * <pre>java ... io.txbox.relay.NotifyCost [transactionsPerThread=3000]</pre>
 */
public final class NotifyCost {
    public static void main(String[] args) throws Exception {
        int perThread = args.length > 0 ? Integer.parseInt(args[0]) : 3000;
        HikariConfig hc = new HikariConfig();
        hc.setJdbcUrl(System.getenv().getOrDefault("TXBOX_TEST_JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
        hc.setUsername(System.getenv().getOrDefault("TXBOX_TEST_JDBC_USER", "postgres"));
        hc.setMaximumPoolSize(8);
        try (HikariDataSource ds = new HikariDataSource(hc)) {
            Db db = new Db(ds, "txbox_bench_notify");
            String table = db.tables.qualified(db.tables.outboxTable());
            db.execute("CREATE OR REPLACE FUNCTION txbox_bench_notify.notify_outbox() RETURNS trigger LANGUAGE plpgsql AS "
                    + "$$ BEGIN PERFORM pg_notify('txbox_outbox', ''); RETURN NULL; END $$");
            db.execute("DROP TRIGGER IF EXISTS outbox_notify ON " + table);
            for (int round = 0; round < 2; round++) {
                for (boolean notify : new boolean[] {false, true}) {
                    db.execute("DROP TRIGGER IF EXISTS outbox_notify ON " + table);
                    if (notify) {
                        db.execute("CREATE TRIGGER outbox_notify AFTER INSERT ON " + table
                                + " FOR EACH STATEMENT EXECUTE FUNCTION txbox_bench_notify.notify_outbox()");
                    }
                    for (int threads : new int[] {1, 4}) {
                        db.execute("TRUNCATE " + table);
                        double rate = run(db, threads, perThread);
                        if (round == 1) {
                            System.out.printf("NOTIFY %-5s threads=%d: %.0f tx/s%n", notify ? "on" : "off", threads, rate);
                        }
                    }
                }
            }
            db.execute("DROP TRIGGER IF EXISTS outbox_notify ON " + table);
        }
    }

    private static double run(Db db, int threads, int perThread) throws Exception {
        AtomicInteger seq = new AtomicInteger();
        List<Thread> ts = new ArrayList<>();
        long start = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                try (Connection c = db.ds.getConnection()) {
                    c.setAutoCommit(false);
                    for (int i = 0; i < perThread; i++) {
                        int n = seq.incrementAndGet();
                        db.outbox.send(c, OutboxMessage.builder(StepKey.of("n" + System.nanoTime() + "-" + n, "s"), "d")
                                .routingKey("k" + n).payload(new byte[400]).build());
                        c.commit();
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            ts.add(th);
            th.start();
        }
        for (Thread th : ts) {
            th.join();
        }
        return threads * perThread / ((System.nanoTime() - start) / 1e9);
    }
}
