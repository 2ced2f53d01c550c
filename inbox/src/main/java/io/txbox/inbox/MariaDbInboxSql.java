package io.txbox.inbox;

import static io.txbox.inbox.InboxSql.bytes;
import static io.txbox.inbox.InboxSql.ofConsumer;
import static io.txbox.inbox.InboxSql.p;
import static io.txbox.inbox.InboxSql.stmt;
import static io.txbox.inbox.InboxStore.COMPLETED;
import static io.txbox.inbox.InboxStore.DEAD;
import static io.txbox.inbox.InboxStore.FAILED;
import static io.txbox.inbox.InboxStore.PROCESSING;
import static io.txbox.internal.mariadb.schema.tables.TxboxInbox.TXBOX_INBOX;

import io.txbox.TxboxTables;
import io.txbox.inbox.InboxSql.Stmt;
import io.txbox.internal.Dialect;
import io.txbox.internal.Jooq;
import io.txbox.internal.mariadb.schema.tables.TxboxInbox;
import io.txbox.internal.shaded.jooq.Condition;
import io.txbox.internal.shaded.jooq.DSLContext;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.InsertOnDuplicateSetMoreStep;
import io.txbox.internal.shaded.jooq.Param;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.internal.shaded.jooq.impl.SQLDataType;
import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;

/**
 * The inbox's statements on MariaDB 10.6+ and MySQL 8.0+, the counterparts of {@link InboxSql},
 * rendered once per inbox with jOOQ's MariaDB / MySQL dialect from the generated MariaDB table
 * (schema and prefix applied), and bound per call by {@link MariaDbInboxStore}.
 *
 * <p><b>Writes without a SELECT before the INSERT.</b> {@link #receive}, {@link #recordFailure}
 * and {@link #claim} are each one {@code INSERT ... ON DUPLICATE KEY UPDATE}: a first delivery
 * inserts the entry; on a duplicate key InnoDB takes an exclusive lock on the existing row
 * (waiting, at any isolation level, for a transaction that inserted or changed it to end) and
 * runs the update. The update takes the entry over only when it may run again (FAILED, or
 * PROCESSING with an expired lease) and the fingerprints agree; then it writes the call's random
 * {@code token} into {@code received_txid}, and every later assignment follows that column
 * (MariaDB and MySQL run the assignments left to right, each seeing the values set before it).
 * The write was this call's exactly when its token is there. On MariaDB the statement ends in
 * {@code RETURNING} (10.5+), which gives the row as the write left it, read under the lock the
 * write took: one round trip. MySQL has no {@code RETURNING}, and the affected-rows count depends
 * on the driver's found-rows flag, so there {@link #read} reads the row back with
 * {@code FOR UPDATE}: the lock is already held, and a locking read sees the latest committed row
 * (a plain read at REPEATABLE READ would see the transaction's snapshot, which may predate the
 * entry). Which of the two is decided once, from the dialect the first connection showed
 * ({@link Dialect#insertReturning()}). Parameters are bound again instead of
 * {@code VALUES(col)}, which MySQL 8.0.20+ deprecates.
 *
 * <p><b>Time.</b> Leases are in database time ({@code CURRENT_TIMESTAMP(6)}). The fencing token
 * is the attempt number together with the lease end, read and compared as microseconds since the
 * epoch ({@code UNIX_TIMESTAMP}), and cutoffs are bound as epoch seconds, so neither the JVM's nor
 * the session's time zone can make two equal instants look different. Each plain-SQL field below
 * is one of these functions, which jOOQ's own would render less exactly.
 */
final class MariaDbInboxSql {
    private static final TxboxInbox T = TXBOX_INBOX;
    /** The start of the name of the savepoint a FIRST receive sets, before its token in base 36. */
    static final String SAVEPOINT = "txbox_";

    /**
     * Binds: consumer, key, fingerprint, token, then fingerprint x 2 and token x 5 of the update,
     * then (on MariaDB) the token of {@code RETURNING}, as {@link #recordFailure} and {@link #claim}.
     */
    final Stmt receive;
    /** Binds: consumer, key, fingerprint, error, token, then fingerprint x 2, token x 5 and error of the update. */
    final Stmt recordFailure;
    /** Binds: consumer, key, fingerprint, token, then fingerprint x 2 and token x 6 of the update. */
    final Stmt claim;
    /** MySQL's read after an upsert. Binds: token, consumer, key. Columns: {@link #entry}'s. */
    final Stmt read;
    /** Binds: consumer, key. The token of the COMPLETED entry, locked. */
    final Stmt receivedToken;
    final Stmt storeResult;
    final Stmt complete;
    final Stmt fail;
    /** Binds: consumer, key. Status, attempts, failures, after {@link #fail} changed the entry. */
    final Stmt failed;
    final Stmt release;
    final Stmt resetDead;
    final Stmt listDead;
    final Stmt purge;
    final Stmt completedByConsumer;
    final Stmt countDead;
    /** The statements every store binds alike ({@link JdbcInboxStore}). */
    final JdbcInboxStore.Shared shared;
    /**
     * Whether the three upserts end in {@code RETURNING} the columns of {@link #read} (MariaDB):
     * one round trip, with {@link #read} unused. MySQL has no {@code RETURNING}, so there each
     * upsert is followed by {@link #read}.
     */
    final boolean returning;

    MariaDbInboxSql(TxboxTables tables, Dialect dialect, int maxAttempts, long leaseMicros, int purgeBatch) {
        this(tables, dialect, dialect.insertReturning(), maxAttempts, leaseMicros, purgeBatch);
    }

    /** With {@code returning} given: false on MariaDB renders MySQL's path in MariaDB's words, for tests. */
    MariaDbInboxSql(TxboxTables tables, Dialect dialect, boolean returning, int maxAttempts, long leaseMicros,
            int purgeBatch) {
        DSLContext ctx = Jooq.renderer(tables, dialect);
        this.returning = returning;
        Field<String> completed = DSL.inline(COMPLETED);
        Field<String> processing = DSL.inline(PROCESSING);
        Field<String> failed = DSL.inline(FAILED);
        Field<String> dead = DSL.inline(DEAD);
        Field<LocalDateTime> noTime = DSL.castNull(SQLDataType.LOCALDATETIME);
        // The statement's start in database time, to the microsecond: the one clock all workers share.
        Field<LocalDateTime> now = DSL.field("CURRENT_TIMESTAMP(6)", SQLDataType.LOCALDATETIME);
        Field<LocalDateTime> leaseEnd = DSL.field("{0} + INTERVAL {1} MICROSECOND", SQLDataType.LOCALDATETIME, now,
                DSL.inline(leaseMicros));
        Condition retryable = T.STATUS.eq(failed).or(T.STATUS.eq(processing).and(T.LEASE_UNTIL.lt(now)));
        Condition byKey = T.CONSUMER.eq(p("consumer")).and(T.MESSAGE_KEY.eq(p("key")));
        Names n = new Names();

        receive = savepointFirst(upsert(ctx.insertInto(T, T.CONSUMER, T.MESSAGE_KEY, T.STATUS, T.FINGERPRINT, T.ATTEMPTS,
                        T.COMPLETED_AT, T.RECEIVED_TXID)
                .values(n.p("consumer"), n.p("key"), completed, n.bytes("fingerprint"), DSL.inline(1), now, n.token())
                .onDuplicateKeyUpdate()
                .set(T.RECEIVED_TXID, DSL.when(retryable.and(n.sameFingerprint()), n.token()).else_(T.RECEIVED_TXID))
                .set(T.ATTEMPTS, DSL.when(n.mine(), T.ATTEMPTS.plus(DSL.inline(1))).else_(T.ATTEMPTS))
                .set(T.STATUS, DSL.when(n.mine(), completed).else_(T.STATUS))
                .set(T.COMPLETED_AT, DSL.when(n.mine(), now).else_(T.COMPLETED_AT))
                .set(T.LEASE_UNTIL, DSL.when(n.mine(), noTime).else_(T.LEASE_UNTIL)), n, now));

        // DEAD follows failures, not attempts (see InboxSql); failures is counted first, so the
        // status after it sees the new count.
        n = new Names();
        recordFailure = upsert(ctx.insertInto(T, T.CONSUMER, T.MESSAGE_KEY, T.STATUS, T.FINGERPRINT, T.ATTEMPTS,
                        T.FAILURES, T.LAST_ERROR, T.RECEIVED_TXID)
                .values(n.p("consumer"), n.p("key"), maxAttempts <= 1 ? dead : failed, n.bytes("fingerprint"),
                        DSL.inline(1), DSL.inline(1), n.p("error"), n.token())
                .onDuplicateKeyUpdate()
                .set(T.RECEIVED_TXID, DSL.when(retryable.and(n.sameFingerprint()), n.token()).else_(T.RECEIVED_TXID))
                .set(T.FAILURES, DSL.when(n.mine(), T.FAILURES.plus(DSL.inline(1))).else_(T.FAILURES))
                .set(T.STATUS, DSL.when(n.mine(), DSL.when(T.FAILURES.ge(DSL.inline(maxAttempts)), dead).else_(failed))
                        .else_(T.STATUS))
                .set(T.ATTEMPTS, DSL.when(n.mine(), T.ATTEMPTS.plus(DSL.inline(1))).else_(T.ATTEMPTS))
                .set(T.LEASE_UNTIL, DSL.when(n.mine(), noTime).else_(T.LEASE_UNTIL))
                .set(T.LAST_ERROR, DSL.when(n.mine(), n.p("error")).else_(T.LAST_ERROR)), n, now);

        // A takeover of an expired lease counts a failure (the worker neither completed, failed
        // nor released); when that failure uses up maxAttempts the entry is parked as DEAD. After
        // failures and status are decided (left to right), status = 'DEAD' means exactly that.
        n = new Names();
        claim = upsert(ctx.insertInto(T, T.CONSUMER, T.MESSAGE_KEY, T.STATUS, T.FINGERPRINT, T.ATTEMPTS,
                        T.LEASE_UNTIL, T.RECEIVED_TXID)
                .values(n.p("consumer"), n.p("key"), processing, n.bytes("fingerprint"), DSL.inline(1), leaseEnd,
                        n.token())
                .onDuplicateKeyUpdate()
                .set(T.RECEIVED_TXID, DSL.when(retryable.and(n.sameFingerprint()), n.token()).else_(T.RECEIVED_TXID))
                .set(T.FAILURES, DSL.when(n.mine().and(T.STATUS.eq(processing)), T.FAILURES.plus(DSL.inline(1)))
                        .else_(T.FAILURES))
                .set(T.STATUS, DSL.when(n.mine(), DSL.when(T.STATUS.eq(processing)
                                .and(T.FAILURES.ge(DSL.inline(maxAttempts))), dead).else_(processing))
                        .else_(T.STATUS))
                .set(T.ATTEMPTS, DSL.when(n.mine().and(T.STATUS.ne(dead)), T.ATTEMPTS.plus(DSL.inline(1)))
                        .else_(T.ATTEMPTS))
                .set(T.LAST_ERROR, DSL.when(n.mine().and(T.STATUS.eq(dead)), DSL.concat(
                                DSL.inline("lease expired on attempt "), T.ATTEMPTS.cast(SQLDataType.CHAR),
                                DSL.inline(", failure "), T.FAILURES.cast(SQLDataType.CHAR),
                                DSL.inline(" of " + maxAttempts + "; last error: "),
                                DSL.coalesce(T.LAST_ERROR, DSL.inline("none"))))
                        .else_(T.LAST_ERROR))
                .set(T.LEASE_UNTIL, DSL.when(n.mine(), DSL.when(T.STATUS.eq(dead), noTime).else_(leaseEnd))
                        .else_(T.LEASE_UNTIL)), n, now);

        read = stmt(ctx.select(entry(DSL.param("token", SQLDataType.BIGINT), now)).from(T).where(byKey).forUpdate(),
                "token", "consumer", "key");

        receivedToken = stmt(ctx.select(T.RECEIVED_TXID).from(T).where(byKey).and(T.STATUS.eq(completed)).forUpdate(),
                "consumer", "key");
        storeResult = stmt(ctx.update(T).set(T.RESULT, bytes("result"))
                .where(byKey).and(T.STATUS.eq(completed))
                .and(T.RECEIVED_TXID.eq(DSL.param("token", SQLDataType.BIGINT))),
                "result", "consumer", "key", "token");

        Condition fence = byKey.and(T.STATUS.eq(processing))
                .and(T.ATTEMPTS.eq(DSL.param("attempt", SQLDataType.INTEGER)))
                .and(epochMicros(T.LEASE_UNTIL).eq(DSL.param("lease", SQLDataType.BIGINT)));
        complete = stmt(ctx.update(T)
                .set(T.STATUS, completed)
                .set(T.COMPLETED_AT, now)
                .set(T.LEASE_UNTIL, noTime)
                .set(T.RESULT, bytes("result"))
                .set(T.RESULT_STATUS, DSL.param("resultStatus", SQLDataType.INTEGER))
                .set(T.RESULT_HEADER_NAMES, DSL.param("headerNames", SQLDataType.JSON))
                .set(T.RESULT_HEADER_VALUES, DSL.param("headerValues", SQLDataType.JSON))
                .where(fence),
                "result", "resultStatus", "headerNames", "headerValues", "consumer", "key", "attempt", "lease");

        // failures first, so the status after it sees the new count
        fail = stmt(ctx.update(T)
                .set(T.FAILURES, T.FAILURES.plus(DSL.inline(1)))
                .set(T.STATUS, DSL.when(T.FAILURES.ge(DSL.inline(maxAttempts)), dead).else_(failed))
                .set(T.LAST_ERROR, p("error"))
                .set(T.LEASE_UNTIL, noTime)
                .where(fence),
                "error", "consumer", "key", "attempt", "lease");
        this.failed = stmt(ctx.select(T.STATUS, T.ATTEMPTS, T.FAILURES).from(T).where(byKey), "consumer", "key");

        // Not a failure: failures stays as it is, so releases never make an entry DEAD.
        release = stmt(ctx.update(T).set(T.STATUS, failed).set(T.LEASE_UNTIL, noTime).where(fence),
                "consumer", "key", "attempt", "lease");

        // Fencing stays safe with attempts back at 0: complete and fail also match the lease end,
        // which no later claim repeats.
        resetDead = stmt(ctx.update(T)
                .set(T.STATUS, failed)
                .set(T.ATTEMPTS, DSL.inline(0))
                .set(T.FAILURES, DSL.inline(0))
                .set(T.LEASE_UNTIL, noTime)
                .where(byKey).and(T.STATUS.eq(dead)),
                "consumer", "key");

        Condition ofConsumer = ofConsumer(T.CONSUMER);
        listDead = stmt(ctx.select(T.CONSUMER, T.MESSAGE_KEY, T.ATTEMPTS, T.LAST_ERROR, epochMicros(T.RECEIVED_AT))
                .from(T)
                .where(T.STATUS.eq(dead)).and(ofConsumer)
                .orderBy(T.RECEIVED_AT, T.MESSAGE_KEY)
                .limit(DSL.param("limit", SQLDataType.INTEGER)),
                "consumer", "prefixLength", "prefix", "limit");

        // Bounded batches, oldest first, each its own statement. DELETE has no SKIP LOCKED here:
        // a batch waits for a delivery that holds one of its rows, at most innodb_lock_wait_timeout.
        purge = stmt(ctx.deleteFrom(T)
                .where(T.STATUS.eq(completed))
                .and(T.COMPLETED_AT.lt(fromEpochSeconds("cutoff")))
                .and(ofConsumer)
                .orderBy(T.COMPLETED_AT)
                .limit(DSL.inline(purgeBatch)),
                "cutoff", "consumer", "prefixLength", "prefix");

        completedByConsumer = stmt(ctx.select(T.CONSUMER, DSL.count()).from(T)
                .where(T.STATUS.eq(completed))
                .and(T.COMPLETED_AT.lt(fromEpochSeconds("cutoff")))
                .groupBy(T.CONSUMER),
                "cutoff");
        countDead = stmt(ctx.selectCount().from(T).where(T.STATUS.eq(dead)));
        shared = new JdbcInboxStore.Shared(complete, release, resetDead, listDead, purge, completedByConsumer, countDead);
    }

    /**
     * What a write reports of the entry, in the order {@link MariaDbInboxStore} reads it: mine
     * ({@code token} is the entry's), status, fingerprint, result, result_status,
     * result_header_names, result_header_values (json), attempts, failures, last_error, lease
     * running, lease end (epoch microseconds).
     */
    private static List<Field<?>> entry(Field<Long> token, Field<LocalDateTime> now) {
        return List.of(DSL.field(T.RECEIVED_TXID.eq(token)), T.STATUS, T.FINGERPRINT, T.RESULT, T.RESULT_STATUS,
                T.RESULT_HEADER_NAMES, T.RESULT_HEADER_VALUES, T.ATTEMPTS, T.FAILURES, T.LAST_ERROR,
                DSL.field(T.LEASE_UNTIL.gt(now)), epochMicros(T.LEASE_UNTIL));
    }

    /**
     * One of the three upserts, returning {@link #entry} where the database can ({@link #returning}):
     * MariaDB returns the row as the statement left it, inserted or updated (or left alone), read
     * under the lock the write took, so it is what {@link #read} would have seen.
     */
    private Stmt upsert(InsertOnDuplicateSetMoreStep<?> upsert, Names n, Field<LocalDateTime> now) {
        return returning ? stmt(upsert.returningResult(entry(n.token(), now)), n.done()) : stmt(upsert, n.done());
    }

    /**
     * MariaDB's receive also sets {@link MariaDbInboxStore}'s savepoint, named after the token
     * (bound first, as {@link #SAVEPOINT} and the token in base 36), in the same round trip: an
     * anonymous block runs both and returns the upsert's row. The name is bound, not rendered, so
     * the statement's text is the same for every call. The savepoint is set whatever the upsert
     * finds; only a row that carries its token makes it count.
     */
    private Stmt savepointFirst(Stmt upsert) {
        if (!returning) {
            return upsert;
        }
        List<String> params = new ArrayList<>(upsert.params());
        params.add(0, "savepoint");
        return new Stmt("BEGIN NOT ATOMIC EXECUTE IMMEDIATE CONCAT('SAVEPOINT " + SAVEPOINT + "', ?); " + upsert.sql()
                + "; END", List.copyOf(params));
    }

    /** {@code column} as whole microseconds since the epoch, free of any time zone; null stays null. */
    private static Field<Long> epochMicros(Field<LocalDateTime> column) {
        return DSL.field("CAST(UNIX_TIMESTAMP({0}) * 1000000 AS SIGNED)", SQLDataType.BIGINT, column);
    }

    /** A parameter bound as epoch seconds with 6 decimals ({@link BigDecimal}), as a time in the session's zone. */
    private static Field<LocalDateTime> fromEpochSeconds(String name) {
        return DSL.field("FROM_UNIXTIME({0})", SQLDataType.LOCALDATETIME, DSL.param(name, SQLDataType.DECIMAL(20, 6)));
    }

    /**
     * Parameter names of one upsert, in the order they are made (which is their bind order):
     * jOOQ keys parameters by name, so each repeated bind gets a name of its own.
     */
    private static final class Names {
        private final List<String> made = new ArrayList<>();
        private int tokens;
        private int fingerprints;
        private int errors;

        Param<String> p(String name) {
            return InboxSql.p(add(name));
        }

        Param<byte[]> bytes(String name) {
            return InboxSql.bytes(add(name));
        }

        Param<Long> token() {
            return DSL.param(add(tokens++ == 0 ? "token" : "token" + tokens), SQLDataType.BIGINT);
        }

        /** The takeover's fingerprint check; a missing fingerprint on either side matches anything. */
        Condition sameFingerprint() {
            Param<byte[]> isNull = InboxSql.bytes(add("fingerprint" + ++fingerprints));
            Param<byte[]> equal = InboxSql.bytes(add("fingerprint" + ++fingerprints));
            return T.FINGERPRINT.isNull().or(isNull.isNull()).or(T.FINGERPRINT.eq(equal));
        }

        /** Whether the update took the entry over, {@code received_txid} having been decided first. */
        Condition mine() {
            return T.RECEIVED_TXID.eq(token());
        }

        String[] done() {
            return made.toArray(new String[0]);
        }

        private String add(String name) {
            String unique = name.equals("error") && errors++ > 0 ? "error" + errors : name;
            made.add(unique);
            return unique;
        }
    }
}
