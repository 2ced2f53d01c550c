package io.txbox.relay;

import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;
import java.util.function.IntUnaryOperator;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;

/** Test helpers around one schema's outbox tables. */
final class Db {
    final DataSource ds;
    final TxboxTables tables;
    final Outbox outbox;
    private final UnaryOperator<String> qualify;

    Db(DataSource ds, String schema) {
        this(ds, schema, null);
    }

    /** The outbox tables in {@code db}'s own schema, PostgreSQL or MariaDB. */
    Db(TestDatabase db) {
        this(db.dataSource(), db.schema(), db);
    }

    /** The outbox tables in {@code schema}, another schema of {@code db}'s database. */
    Db(TestDatabase db, String schema) {
        this(db.dataSource(), schema, db);
    }

    private Db(DataSource ds, String schema, TestDatabase db) {
        this.ds = ds;
        this.tables = TxboxTables.inSchema(schema);
        this.qualify = db == null ? tables::qualified : table -> db.qualified(schema, table);
        TxboxMigrations.migrate(ds, tables);
        this.outbox = Outbox.builder().tables(tables).maxRecordBytes(8 * 1024 * 1024).build();
    }

    /** {@code name} in this schema, quoted the way the database quotes. */
    String table(String name) {
        return qualify.apply(name);
    }

    static OutboxMessage message(String key, String destination, String routingKey, String payload) {
        return OutboxMessage.builder(StepKey.of(key, "step"), destination).routingKey(routingKey)
                .payload(payload).contentType("text/plain").build();
    }

    void send(OutboxMessage... messages) {
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            outbox.sendAll(c, List.of(messages));
            c.commit();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Sends {@code count} messages in transactions of up to 1000. */
    void sendMany(int count, IntFunction<OutboxMessage> message) {
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            List<OutboxMessage> chunk = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                chunk.add(message.apply(i));
                if (chunk.size() == 1000 || i == count - 1) {
                    outbox.sendAll(c, chunk);
                    c.commit();
                    chunk.clear();
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Sends rows {@code 0..count-1} through {@code writers} threads, each on its own connection, in
     * transactions of up to {@code perTransaction} rows: row {@code i} goes to writer
     * {@code writerOf(i)}, which sends its rows in ascending {@code i}, committing each transaction
     * before it begins the next. Give all rows of a routing key to one writer and the key's rows
     * come from strictly sequential transactions, while the writers' transactions overlap: ids are
     * taken in one order and committed in another. With a positive {@code stall}, each writer holds
     * one transaction of the first half of its rows (chosen by {@code seed}) open that long before
     * it commits, while the other writers' rows flow: the slow commit a per-key order must survive.
     */
    void sendConcurrently(int count, int writers, int perTransaction, IntUnaryOperator writerOf, Duration stall,
            long seed, IntFunction<OutboxMessage> message) {
        List<List<Integer>> rows = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            rows.add(new ArrayList<>());
        }
        for (int i = 0; i < count; i++) {
            rows.get(writerOf.applyAsInt(i)).add(i);
        }
        Random random = new Random(seed);
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (List<Integer> mine : rows) {
                int transactions = (mine.size() + perTransaction - 1) / perTransaction;
                int stalled = stall.isZero() || transactions < 2 ? -1 : random.nextInt(Math.max(1, transactions / 2));
                done.add(pool.submit(() -> {
                    try (Connection c = ds.getConnection()) {
                        c.setAutoCommit(false);
                        for (int t = 0; t < transactions; t++) {
                            List<OutboxMessage> chunk = new ArrayList<>();
                            for (int i : mine.subList(t * perTransaction, Math.min(mine.size(), (t + 1) * perTransaction))) {
                                chunk.add(message.apply(i));
                            }
                            outbox.sendAll(c, chunk);
                            if (t == stalled) {
                                Thread.sleep(stall.toMillis()); // a slow writer: its ids are taken, its commit is late
                            }
                            c.commit();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        } catch (Exception e) {
            throw new IllegalStateException("a writer failed (seed " + seed + "): " + e, e);
        } finally {
            pool.shutdownNow();
        }
    }

    long count(String table) {
        return queryLong("SELECT count(*) FROM " + table(table));
    }

    long outboxRows() {
        return count(tables.outboxTable());
    }

    long deadRows() {
        return count(tables.outboxDeadTable());
    }

    long queryLong(String sql, Object... args) {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : -1;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    String queryString(String sql, Object... args) {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    void execute(String sql) {
        try (Connection c = ds.getConnection(); var s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    static String utf8(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
