package io.txbox.inbox;

import io.txbox.internal.ByDialect;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The store of the database the inbox's first call connects to: building an inbox needs no
 * connection, so the dialect is read ({@link io.txbox.internal.Dialect#of(Connection)}) from the
 * first connection a call gets, and that store is kept. One inbox serves one database.
 */
final class DialectInboxStore implements InboxStore {
    private final ByDialect<InboxStore> store;
    private final int purgeBatchSize;

    DialectInboxStore(ByDialect<InboxStore> store, int purgeBatchSize) {
        this.store = store;
        this.purgeBatchSize = purgeBatchSize;
    }

    @Override
    public <T> T receive(Connection tx, Scope s, byte @Nullable [] fp, Answers<T> answers) throws SQLException {
        return store.on(tx).receive(tx, s, fp, answers);
    }

    @Override
    public <T> List<T> receiveAll(Connection tx, List<Scope> scopes, List<byte @Nullable []> fps,
            List<Answers<T>> answers) throws SQLException {
        return store.on(tx).receiveAll(tx, scopes, fps, answers);
    }

    @Override
    public <T> T commitAndReceive(Connection tx, Scope s, byte @Nullable [] fp, Answers<T> answers)
            throws SQLException {
        return store.on(tx).commitAndReceive(tx, s, fp, answers);
    }

    @Override
    public int storeResult(Connection tx, Scope s, byte[] result) throws SQLException {
        return store.on(tx).storeResult(tx, s, result);
    }

    @Override
    public <T> T recordFailure(Connection c, Scope s, byte @Nullable [] fp, String error, Answers<T> answers)
            throws SQLException {
        return store.on(c).recordFailure(c, s, fp, error, answers);
    }

    @Override
    public <T> T claim(Connection c, Scope s, byte @Nullable [] fp, Answers<T> answers) throws SQLException {
        return store.on(c).claim(c, s, fp, answers);
    }

    @Override
    public boolean complete(Connection c, Scope s, Claim claim, byte @Nullable [] result,
            @Nullable Integer resultStatus, @Nullable Map<String, List<String>> headers) throws SQLException {
        return store.on(c).complete(c, s, claim, result, resultStatus, headers);
    }

    @Override
    public @Nullable Written fail(Connection c, Scope s, Claim claim, String error) throws SQLException {
        return store.on(c).fail(c, s, claim, error);
    }

    @Override
    public boolean release(Connection c, Scope s, Claim claim) throws SQLException {
        return store.on(c).release(c, s, claim);
    }

    @Override
    public boolean resetDead(Connection c, Scope s) throws SQLException {
        return store.on(c).resetDead(c, s);
    }

    @Override
    public List<DeadEntry> listDead(Connection c, String consumer, int limit) throws SQLException {
        return store.on(c).listDead(c, consumer, limit);
    }

    @Override
    public int purgeBatch(Connection c, String consumer, OffsetDateTime cutoff) throws SQLException {
        return store.on(c).purgeBatch(c, consumer, cutoff);
    }

    @Override
    public Map<String, Long> completedByConsumer(Connection c, OffsetDateTime cutoff) throws SQLException {
        return store.on(c).completedByConsumer(c, cutoff);
    }

    @Override
    public long countDead(Connection c) throws SQLException {
        return store.on(c).countDead(c);
    }

    @Override
    public boolean writesInOneStatement(Connection c) throws SQLException {
        return store.on(c).writesInOneStatement(c);
    }

    @Override
    public int purgeBatchSize() {
        return purgeBatchSize;
    }
}
