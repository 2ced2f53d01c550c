package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.RetryableException;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Many workers delivering the same keys at once, at each database's default isolation level
 * (READ COMMITTED on PostgreSQL, REPEATABLE READ on MariaDB): the primary key lets exactly one
 * win each key.
 */
class InboxConcurrencyIT {
    private static final int THREADS = 32;
    private static final int KEYS = 1000;

    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(THREADS);

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_32ThreadsSame1000Keys_leaveExactly1000BusinessRows(TestDatabase db) throws Exception {
        Rows rows = Rows.of(db);
        rows.execute("create table " + rows.table("business") + " (message_key " + rows.text()
                + " not null, worker int not null)");
        Inbox inbox = Inbox.builder("concurrent").tables(rows.tables).build();
        String insert = "insert into " + rows.table("business") + " (message_key, worker) values (?, ?)";
        AtomicInteger firsts = new AtomicInteger();
        AtomicInteger duplicates = new AtomicInteger();
        AtomicInteger retried = new AtomicInteger();
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
                try (Connection c = db.dataSource().getConnection()) {
                    c.setAutoCommit(false);
                    for (int k : order) {
                        InboundMessage m = InboundMessage.of("order-" + k, ByteBuffer.allocate(4).putInt(k).array());
                        while (true) {
                            try {
                                Receipt r = inbox.receive(c, m);
                                if (r.isFirst()) {
                                    try (PreparedStatement ps = c.prepareStatement(insert)) {
                                        ps.setString(1, m.key());
                                        ps.setInt(2, worker);
                                        ps.executeUpdate();
                                    }
                                } else {
                                    assertThat(r.status()).isEqualTo(Receipt.Status.DUPLICATE);
                                }
                                c.commit();
                                (r.isFirst() ? firsts : duplicates).incrementAndGet();
                                break;
                            } catch (RetryableException e) {
                                // a deadlock or lock wait the database broke: the whole transaction again
                                c.rollback();
                                retried.incrementAndGet();
                            }
                        }
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
        System.out.printf("%s: %d deliveries by %d threads in %d ms (%.0f tx/s), %d retried%n", db.kind(),
                THREADS * KEYS, THREADS, millis, THREADS * KEYS * 1000.0 / Math.max(1, millis), retried.get());

        assertThat(rows.queryLong("select count(*) from " + rows.table("business") + "")).isEqualTo(KEYS);
        assertThat(rows.queryLong("select count(distinct message_key) from " + rows.table("business") + ""))
                .isEqualTo(KEYS);
        assertThat(firsts.get()).isEqualTo(KEYS);
        assertThat(duplicates.get()).isEqualTo(THREADS * KEYS - KEYS);
        assertThat(rows.count("consumer = 'concurrent' and status = 'COMPLETED'")).isEqualTo(KEYS);
    }
}
