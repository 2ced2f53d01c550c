package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestPostgres;
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Many workers delivering the same keys at once: the primary key lets exactly one win each key. */
class InboxConcurrencyIT {
    private static final int THREADS = 32;
    private static final int KEYS = 1000;

    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass(THREADS);

    static TxboxTables tables;
    static Rows rows;

    @BeforeAll
    static void migrate() {
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        rows = new Rows(PG.dataSource(), tables);
        rows.execute("create table " + PG.schema() + ".business (message_key text not null, worker int not null)");
    }

    @Test
    void receive_32ThreadsSame1000Keys_leaveExactly1000BusinessRows() throws Exception {
        Inbox inbox = Inbox.builder("concurrent").tables(tables).build();
        String insert = "insert into " + PG.schema() + ".business (message_key, worker) values (?, ?)";
        AtomicInteger firsts = new AtomicInteger();
        AtomicInteger duplicates = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int worker = t;
            done.add(pool.submit(() -> {
                List<Integer> order = new ArrayList<>();
                for (int k = 0; k < KEYS; k++) {
                    order.add(k);
                }
                // Half the workers walk the keys in the same order (head-on collisions), half shuffled.
                if (worker % 2 == 1) {
                    Collections.shuffle(order, new Random(worker));
                }
                start.await();
                try (Connection c = PG.dataSource().getConnection()) {
                    c.setAutoCommit(false);
                    for (int k : order) {
                        InboundMessage m = InboundMessage.of("order-" + k, ByteBuffer.allocate(4).putInt(k).array());
                        Receipt r = inbox.receive(c, m);
                        if (r.isFirst()) {
                            try (PreparedStatement ps = c.prepareStatement(insert)) {
                                ps.setString(1, m.key());
                                ps.setInt(2, worker);
                                ps.executeUpdate();
                            }
                            firsts.incrementAndGet();
                        } else {
                            assertThat(r.status()).isEqualTo(Receipt.Status.DUPLICATE);
                            duplicates.incrementAndGet();
                        }
                        c.commit();
                    }
                    c.setAutoCommit(true);
                }
                return null;
            }));
        }
        long began = System.nanoTime();
        start.countDown();
        for (Future<?> f : done) {
            f.get(5, TimeUnit.MINUTES);
        }
        pool.shutdown();
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began);
        System.out.printf("%d deliveries by %d threads in %d ms (%.0f tx/s)%n",
                THREADS * KEYS, THREADS, millis, THREADS * KEYS * 1000.0 / Math.max(1, millis));

        assertThat(rows.queryLong("select count(*) from " + PG.schema() + ".business")).isEqualTo(KEYS);
        assertThat(rows.queryLong("select count(distinct message_key) from " + PG.schema() + ".business"))
                .isEqualTo(KEYS);
        assertThat(firsts.get()).isEqualTo(KEYS);
        assertThat(duplicates.get()).isEqualTo(THREADS * KEYS - KEYS);
        assertThat(rows.count("consumer = 'concurrent' and status = 'COMPLETED'")).isEqualTo(KEYS);
    }
}
