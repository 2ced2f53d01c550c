package io.txbox.inbox;

import static io.txbox.inbox.InboxStore.COMPLETED;
import static io.txbox.inbox.InboxStore.DEAD;
import static io.txbox.inbox.InboxStore.FAILED;
import static io.txbox.inbox.InboxStore.PROCESSING;
import static io.txbox.internal.schema.tables.TxboxInbox.TXBOX_INBOX;

import io.txbox.TxboxTables;
import io.txbox.internal.Jooq;
import io.txbox.internal.PostgresSql;
import io.txbox.internal.schema.tables.TxboxInbox;
import io.txbox.internal.schema.tables.records.TxboxInboxRecord;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import io.txbox.internal.shaded.jooq.Condition;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.InsertOnConflictConditionStep;
import io.txbox.internal.shaded.jooq.InsertOnDuplicateStep;
import io.txbox.internal.shaded.jooq.Param;
import io.txbox.internal.shaded.jooq.Query;
import io.txbox.internal.shaded.jooq.Table;
import io.txbox.internal.shaded.jooq.conf.ParamType;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.internal.shaded.jooq.impl.SQLDataType;

/**
 * The inbox's PostgreSQL statements, rendered once per inbox from the generated table (schema
 * and prefix applied) so that every call is a plain {@link java.sql.PreparedStatement} on the
 * caller's connection, with no jOOQ work on the hot path. Each statement lists its parameter
 * names in bind order; the constructor checks that jOOQ rendered them in that order, so the
 * positional binds in {@link PostgresInboxStore} are safe. Where jOOQ has no DSL for a
 * PostgreSQL function ({@code now()}, {@code txid_current()}, interval arithmetic), a typed
 * plain-SQL field says why next to it.
 */
final class InboxSql {
    /** A rendered statement and its parameters, in bind order. */
    record Stmt(String sql, List<String> params) {}

    private static final TxboxInbox T = TXBOX_INBOX;

    final Stmt receive;
    /** receive for several distinct entries: arrays of consumers, keys and fingerprints; returns the entries written. */
    final Stmt receiveAll;
    /** The previous transaction's COMMIT, then receive in a new one: one round trip, receive's parameters. */
    final Stmt commitAndReceive;
    final Stmt storeResult;
    final Stmt read;
    final Stmt recordFailure;
    final Stmt claim;
    final Stmt complete;
    final Stmt fail;
    final Stmt release;
    final Stmt resetDead;
    final Stmt listDead;
    final Stmt purge;
    final Stmt completedByConsumer;
    final Stmt countDead;
    /** The statements every store binds alike ({@link JdbcInboxStore}). */
    final JdbcInboxStore.Shared shared;

    InboxSql(TxboxTables tables, int maxAttempts, long leaseMicros, int purgeBatch) {
        DSLContext ctx = Jooq.renderer(tables);
        Field<String> completed = DSL.inline(COMPLETED);
        Field<String> processing = DSL.inline(PROCESSING);
        Field<String> failed = DSL.inline(FAILED);
        Field<String> dead = DSL.inline(DEAD);
        // now(): the transaction's start in database time, the one clock all workers share.
        // Plain SQL (typed), so that the statement itself says which clock and which arithmetic
        // the fence relies on (complete and fail match lease_until to the microsecond);
        // jOOQ's currentOffsetDateTime() and timestampAdd() would leave both to its rendering.
        Field<OffsetDateTime> now = DSL.field("now()", SQLDataType.TIMESTAMPWITHTIMEZONE);
        Field<OffsetDateTime> leaseEnd = DSL.field("{0} + {1} * interval '1 microsecond'", SQLDataType.TIMESTAMPWITHTIMEZONE,
                now, DSL.inline(leaseMicros));

        // An existing entry may run again when it failed, or when a two-phase lease expired.
        Condition retryable = T.STATUS.eq(failed).or(T.STATUS.eq(processing).and(T.LEASE_UNTIL.lt(now)));
        // A missing fingerprint on either side (Fingerprint.none()) matches anything.
        Condition sameFingerprint = T.FINGERPRINT.isNull()
                .or(DSL.excluded(T.FINGERPRINT).isNull())
                .or(T.FINGERPRINT.eq(DSL.excluded(T.FINGERPRINT)));
        Condition byKey = T.CONSUMER.eq(p("consumer")).and(T.MESSAGE_KEY.eq(p("key")));

        // txid_current(): the caller's top-level transaction, epoch included. storeResult
        // compares it with the row's received_txid. Chosen over the row's xmin, which names a
        // subtransaction when receive ran under a savepoint and so would refuse a legitimate
        // store; the column costs 8 bytes in a write that happens anyway. Plain SQL (typed):
        // jOOQ has no function for it.
        Field<Long> txid = DSL.field("txid_current()", SQLDataType.BIGINT);
        receive = stmt(onReceiveConflict(ctx.insertInto(T, T.CONSUMER, T.MESSAGE_KEY, T.STATUS, T.FINGERPRINT,
                        T.ATTEMPTS, T.COMPLETED_AT, T.RECEIVED_TXID)
                .values(p("consumer"), p("key"), completed, bytes("fingerprint"), DSL.inline(1), now, txid),
                retryable.and(sameFingerprint), now, txid)
                .returning(T.ATTEMPTS),
                "consumer", "key", "fingerprint");
        // receive for many entries in one statement: three arrays, one element per entry, so the
        // text (and the server's plan) is the same for every batch size. Each entry may appear
        // once: ON CONFLICT DO UPDATE refuses to change a row twice in one statement.
        Table<?> entries = PostgresSql.unnest("e", List.of("consumer", "message_key", "fingerprint"),
                List.of("consumers", "keys", "fingerprints"), SQLDataType.CLOB, SQLDataType.CLOB, SQLDataType.BLOB);
        receiveAll = stmt(onReceiveConflict(ctx.insertInto(T, T.CONSUMER, T.MESSAGE_KEY, T.STATUS, T.FINGERPRINT,
                        T.ATTEMPTS, T.COMPLETED_AT, T.RECEIVED_TXID)
                .select(DSL.select(PostgresSql.column("e", "consumer", String.class),
                                PostgresSql.column("e", "message_key", String.class), completed,
                                PostgresSql.column("e", "fingerprint", byte[].class), DSL.inline(1), now, txid)
                        .from(entries)),
                retryable.and(sameFingerprint), now, txid)
                .returning(T.CONSUMER, T.MESSAGE_KEY, T.ATTEMPTS),
                "consumers", "keys", "fingerprints");
        // pgjdbc sends the three statements with one Sync and binds the markers in order across
        // them; after an error the server skips the rest, so a failed COMMIT never begins anything.
        commitAndReceive = new Stmt("COMMIT; BEGIN; " + receive.sql(), receive.params());

        // Only the transaction whose receive reported FIRST may store: never a later one, nor
        // one whose receive said DUPLICATE (which leaves received_txid alone).
        storeResult = stmt(ctx.update(T).set(T.RESULT, bytes("result"))
                .where(byKey).and(T.STATUS.eq(completed)).and(T.RECEIVED_TXID.eq(txid)),
                "result", "consumer", "key");

        read = stmt(ctx.select(T.STATUS, T.FINGERPRINT, T.RESULT, T.RESULT_STATUS, T.RESULT_HEADER_NAMES,
                        T.RESULT_HEADER_VALUES, T.ATTEMPTS, T.LAST_ERROR, DSL.field(T.LEASE_UNTIL.gt(now)))
                .from(T).where(byKey),
                "consumer", "key");

        // DEAD follows failures, not attempts: attempts counts every run (and is the fencing
        // token), failures only the runs that failed. A release is not a failure.
        Field<Integer> oneMoreFailure = T.FAILURES.plus(DSL.inline(1));
        Field<String> failedOrDead = DSL.when(oneMoreFailure.ge(DSL.inline(maxAttempts)), dead).else_(failed);
        recordFailure = stmt(ctx.insertInto(T, T.CONSUMER, T.MESSAGE_KEY, T.STATUS, T.FINGERPRINT, T.ATTEMPTS, T.FAILURES,
                        T.LAST_ERROR)
                .values(p("consumer"), p("key"), maxAttempts <= 1 ? dead : failed, bytes("fingerprint"), DSL.inline(1),
                        DSL.inline(1), p("error"))
                .onConflict(T.CONSUMER, T.MESSAGE_KEY)
                .doUpdate()
                .set(T.STATUS, failedOrDead)
                .set(T.ATTEMPTS, T.ATTEMPTS.plus(DSL.inline(1)))
                .set(T.FAILURES, oneMoreFailure)
                .set(T.LAST_ERROR, DSL.excluded(T.LAST_ERROR))
                .set(T.LEASE_UNTIL, DSL.castNull(SQLDataType.TIMESTAMPWITHTIMEZONE))
                .where(retryable.and(sameFingerprint))
                .returning(T.STATUS, T.ATTEMPTS, T.FAILURES),
                "consumer", "key", "fingerprint", "error");

        // Taking over an expired lease counts a failure: the worker neither completed, failed
        // nor released. When that failure uses up maxAttempts the entry is parked instead: a
        // message that crashes every worker must not be retried forever.
        Condition expired = T.STATUS.eq(processing);
        Condition exhausted = expired.and(oneMoreFailure.ge(DSL.inline(maxAttempts)));
        claim = stmt(ctx.insertInto(T, T.CONSUMER, T.MESSAGE_KEY, T.STATUS, T.FINGERPRINT, T.ATTEMPTS, T.LEASE_UNTIL)
                .values(p("consumer"), p("key"), processing, bytes("fingerprint"), DSL.inline(1), leaseEnd)
                .onConflict(T.CONSUMER, T.MESSAGE_KEY)
                .doUpdate()
                .set(T.STATUS, DSL.when(exhausted, dead).else_(processing))
                .set(T.ATTEMPTS, DSL.when(exhausted, T.ATTEMPTS).else_(T.ATTEMPTS.plus(DSL.inline(1))))
                .set(T.FAILURES, DSL.when(expired, oneMoreFailure).else_(T.FAILURES))
                .set(T.LEASE_UNTIL, DSL.when(exhausted, DSL.castNull(SQLDataType.TIMESTAMPWITHTIMEZONE))
                        .else_(DSL.excluded(T.LEASE_UNTIL)))
                .set(T.LAST_ERROR, DSL.when(exhausted, DSL.concat(
                                DSL.inline("lease expired on attempt "), T.ATTEMPTS.cast(SQLDataType.CLOB),
                                DSL.inline(", failure "), oneMoreFailure.cast(SQLDataType.CLOB),
                                DSL.inline(" of " + maxAttempts + "; last error: "),
                                DSL.coalesce(T.LAST_ERROR, DSL.inline("none"))))
                        .else_(T.LAST_ERROR))
                .where(retryable.and(sameFingerprint))
                .returning(T.STATUS, T.ATTEMPTS, T.LEASE_UNTIL, T.LAST_ERROR),
                "consumer", "key", "fingerprint");

        Condition fence = byKey.and(T.STATUS.eq(processing))
                .and(T.ATTEMPTS.eq(DSL.param("token", SQLDataType.INTEGER)))
                .and(T.LEASE_UNTIL.eq(DSL.param("lease", SQLDataType.TIMESTAMPWITHTIMEZONE)));
        complete = stmt(ctx.update(T)
                .set(T.STATUS, completed)
                .set(T.COMPLETED_AT, now)
                .set(T.LEASE_UNTIL, DSL.castNull(SQLDataType.TIMESTAMPWITHTIMEZONE))
                .set(T.RESULT, bytes("result"))
                .set(T.RESULT_STATUS, DSL.param("resultStatus", SQLDataType.INTEGER))
                .set(T.RESULT_HEADER_NAMES, DSL.param("headerNames", SQLDataType.CLOB.array()))
                .set(T.RESULT_HEADER_VALUES, DSL.param("headerValues", SQLDataType.CLOB.array()))
                .where(fence),
                "result", "resultStatus", "headerNames", "headerValues", "consumer", "key", "token", "lease");

        fail = stmt(ctx.update(T)
                .set(T.STATUS, failedOrDead)
                .set(T.FAILURES, oneMoreFailure)
                .set(T.LAST_ERROR, p("error"))
                .set(T.LEASE_UNTIL, DSL.castNull(SQLDataType.TIMESTAMPWITHTIMEZONE))
                .where(fence)
                .returning(T.STATUS, T.ATTEMPTS, T.FAILURES),
                "error", "consumer", "key", "token", "lease");

        // Not a failure: failures stays as it is, so releases never make an entry DEAD.
        release = stmt(ctx.update(T)
                .set(T.STATUS, failed)
                .set(T.LEASE_UNTIL, DSL.castNull(SQLDataType.TIMESTAMPWITHTIMEZONE))
                .where(fence),
                "consumer", "key", "token", "lease");

        // failures and attempts restart at 0 for a fresh count; fencing stays safe because
        // complete and fail also match the lease end, which no later claim repeats.
        resetDead = stmt(ctx.update(T)
                .set(T.STATUS, failed)
                .set(T.ATTEMPTS, DSL.inline(0))
                .set(T.FAILURES, DSL.inline(0))
                .set(T.LEASE_UNTIL, DSL.castNull(SQLDataType.TIMESTAMPWITHTIMEZONE))
                .where(byKey).and(T.STATUS.eq(dead)),
                "consumer", "key");

        Condition ofConsumer = ofConsumer(T.CONSUMER);
        listDead = stmt(ctx.select(T.CONSUMER, T.MESSAGE_KEY, T.ATTEMPTS, T.LAST_ERROR, T.RECEIVED_AT)
                .from(T)
                .where(T.STATUS.eq(dead)).and(ofConsumer)
                .orderBy(T.RECEIVED_AT, T.MESSAGE_KEY)
                .limit(DSL.param("limit", SQLDataType.INTEGER)),
                "consumer", "prefixLength", "prefix", "limit");

        // Bounded batches, each its own statement; SKIP LOCKED so a batch never waits behind a
        // delivery that holds an entry's lock.
        purge = stmt(ctx.deleteFrom(T)
                .where(DSL.row(T.CONSUMER, T.MESSAGE_KEY).in(
                        DSL.select(T.CONSUMER, T.MESSAGE_KEY).from(T)
                                .where(T.STATUS.eq(completed))
                                .and(T.COMPLETED_AT.lt(DSL.param("cutoff", SQLDataType.TIMESTAMPWITHTIMEZONE)))
                                .and(ofConsumer)
                                .limit(DSL.inline(purgeBatch))
                                .forUpdate().skipLocked())),
                "cutoff", "consumer", "prefixLength", "prefix");

        // Operator reads across consumers (InboxMaintenance): tenants stay separate rows here.
        completedByConsumer = stmt(ctx.select(T.CONSUMER, DSL.count()).from(T)
                .where(T.STATUS.eq(completed))
                .and(T.COMPLETED_AT.lt(DSL.param("cutoff", SQLDataType.TIMESTAMPWITHTIMEZONE)))
                .groupBy(T.CONSUMER),
                "cutoff");
        countDead = stmt(ctx.selectCount().from(T).where(T.STATUS.eq(dead)));
        shared = new JdbcInboxStore.Shared(complete, release, resetDead, listDead, purge, completedByConsumer, countDead);
    }

    /**
     * receive's answer to an entry that exists: take it over where it may run again (FAILED, or
     * an expired two-phase lease, with the same fingerprint), as COMPLETED by this transaction;
     * otherwise leave it, and return no row for it.
     */
    private static InsertOnConflictConditionStep<TxboxInboxRecord> onReceiveConflict(
            InsertOnDuplicateStep<TxboxInboxRecord> insert, Condition mayRunAgain, Field<OffsetDateTime> now,
            Field<Long> txid) {
        return insert.onConflict(T.CONSUMER, T.MESSAGE_KEY)
                .doUpdate()
                .set(T.STATUS, DSL.inline(COMPLETED))
                .set(T.RECEIVED_TXID, txid)
                .set(T.ATTEMPTS, T.ATTEMPTS.plus(DSL.inline(1)))
                .set(T.COMPLETED_AT, now)
                .set(T.LEASE_UNTIL, DSL.castNull(SQLDataType.TIMESTAMPWITHTIMEZONE))
                .where(mayRunAgain);
    }

    /**
     * The entries of the consumer bound as {@code consumer} or, for a call across tenants, of
     * every consumer whose first {@code prefixLength} characters are {@code prefix}.
     */
    static Condition ofConsumer(Field<String> consumer) {
        return consumer.eq(p("consumer"))
                .or(DSL.left(consumer, DSL.param("prefixLength", SQLDataType.INTEGER)).eq(p("prefix")));
    }

    static Param<String> p(String name) {
        return DSL.param(name, SQLDataType.VARCHAR);
    }

    static Param<byte[]> bytes(String name) {
        return DSL.param(name, SQLDataType.BLOB);
    }

    /** {@code query} rendered with indexed markers, after checking it binds {@code expected}, in that order. */
    static Stmt stmt(Query query, String... expected) {
        List<String> names = query.getParams().entrySet().stream()
                .filter(e -> !e.getValue().isInline())
                .map(Map.Entry::getKey)
                .toList();
        String sql = query.getSQL(ParamType.INDEXED);
        long marks = sql.chars().filter(c -> c == '?').count();
        if (!names.equals(List.of(expected)) || marks != expected.length) {
            throw new IllegalStateException("inbox SQL binds " + names + " (" + marks + " markers), expected "
                    + List.of(expected) + ": " + sql);
        }
        return new Stmt(sql, names);
    }
}
