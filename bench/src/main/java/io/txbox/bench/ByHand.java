package io.txbox.bench;

import com.rabbitmq.client.Channel;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * The relay a careful engineer writes by hand, the baseline {@code ratio_to_by_hand} compares
 * txbox's relay with: each of {@code workers} threads claims a batch with {@code FOR UPDATE SKIP
 * LOCKED} in id order, sends it, waits for every acknowledgement or confirm, deletes the batch by
 * id and commits, until the destination is empty. No lanes, fencing, per-key order, retries,
 * dead letters or metrics: what those cost is the gap between the two.
 */
final class ByHand {
    /** One claimed row. */
    private record Row(long id, Bare.Msg msg) {}

    /** Sends one claimed batch and returns once the broker has acknowledged all of it. */
    @FunctionalInterface
    interface Sender {
        void sendAll(List<Row> rows) throws Exception;
    }

    private ByHand() {}

    /**
     * Drains {@code destination} with {@code workers} threads and batches of {@code batchSize};
     * returns rows per second from the first claim to the last commit.
     */
    static double drain(BenchEnv env, DataSource ds, String destination, int batchSize, int workers,
            java.util.function.Supplier<Sender> senders) throws Exception {
        String claim = "SELECT id, step_key, original_key, routing_key, payload FROM " + env.outboxTable()
                + " WHERE destination = ? ORDER BY id LIMIT " + batchSize + " FOR UPDATE SKIP LOCKED";
        AtomicLong done = new AtomicLong();
        AtomicLong retried = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        long t0 = System.nanoTime();
        try {
            List<Future<?>> running = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                Sender sender = senders.get();
                running.add(pool.submit(() -> {
                    try (Connection c = ds.getConnection()) {
                        // as a careful engineer sets it: no gap locks between the workers' claims and deletes
                        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
                        c.setAutoCommit(false);
                        while (true) {
                            List<Row> rows = claim(c, claim, destination);
                            if (rows.isEmpty()) {
                                c.commit();
                                return null;
                            }
                            sender.sendAll(rows);
                            try {
                                delete(c, env, rows);
                                c.commit();
                            } catch (java.sql.SQLTransactionRollbackException deadlock) {
                                // InnoDB picked this batch as a deadlock victim: claim again, as by-hand code would
                                c.rollback();
                                retried.incrementAndGet();
                                continue;
                            }
                            done.addAndGet(rows.size());
                        }
                    }
                }));
            }
            for (Future<?> f : running) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(10, TimeUnit.SECONDS);
        }
        if (retried.get() > 0) {
            Scenario.log("by hand: %d batches claimed again after a deadlock", retried.get());
        }
        return done.get() / ((System.nanoTime() - t0) / 1e9);
    }

    private static List<Row> claim(Connection c, String sql, String destination) throws SQLException {
        List<Row> rows = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, destination);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Row(rs.getLong(1), new Bare.Msg(rs.getString(2), rs.getString(3), rs.getString(4), rs.getBytes(5))));
                }
            }
        }
        return rows;
    }

    /** One statement per batch: {@code = ANY(array)} on PostgreSQL, an {@code IN} list on MariaDB. */
    private static void delete(Connection c, BenchEnv env, List<Row> rows) throws SQLException {
        if (env.mariadb) {
            StringBuilder in = new StringBuilder("DELETE FROM " + env.outboxTable() + " WHERE id IN (");
            for (int i = 0; i < rows.size(); i++) {
                in.append(i == 0 ? "?" : ",?");
            }
            try (PreparedStatement ps = c.prepareStatement(in.append(')').toString())) {
                for (int i = 0; i < rows.size(); i++) {
                    ps.setLong(i + 1, rows.get(i).id());
                }
                ps.executeUpdate();
            }
            return;
        }
        Long[] ids = rows.stream().map(Row::id).toArray(Long[]::new);
        try (PreparedStatement ps = c.prepareStatement("DELETE FROM " + env.outboxTable() + " WHERE id = ANY(?)")) {
            ps.setArray(1, c.createArrayOf("bigint", ids));
            ps.executeUpdate();
        }
    }

    /** A sender on {@code producer} (shared by the workers, as the relay shares its publisher's). */
    static Sender kafka(KafkaProducer<byte[], byte[]> producer, String topic) {
        return rows -> {
            List<Future<RecordMetadata>> acks = new ArrayList<>(rows.size());
            for (Row r : rows) {
                acks.add(producer.send(Bare.record(topic, r.msg())));
            }
            for (Future<RecordMetadata> ack : acks) {
                ack.get(); // a failure ends the run: the batch is rolled back, as by-hand code would
            }
        };
    }

    /** A sender on a channel of its own in confirm mode, publishing as the relay does (persistent, mandatory). */
    static Sender rabbit(com.rabbitmq.client.Connection conn, String exchange) throws Exception {
        Channel ch = conn.createChannel();
        ch.confirmSelect();
        ch.addReturnListener(r -> {
            throw new IllegalStateException("unroutable by-hand message " + r.getProperties().getMessageId());
        });
        return rows -> {
            Date now = new Date();
            for (Row r : rows) {
                Bare.publish(ch, exchange, r.msg(), now);
            }
            ch.waitForConfirmsOrDie(60_000);
        };
    }
}
