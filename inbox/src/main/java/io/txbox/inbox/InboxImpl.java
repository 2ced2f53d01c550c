package io.txbox.inbox;

import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.Texts;
import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.internal.Args;
import io.txbox.internal.KeyRules;
import io.txbox.internal.SqlErrors;
import io.txbox.internal.Transactions;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import io.txbox.internal.shaded.jooq.DSLContext;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The PostgreSQL inbox. Statements are rendered once, in the constructor. */
final class InboxImpl implements Inbox {
    static final int PURGE_BATCH = 1000;
    /** Longest error text stored in {@code last_error}. */
    static final int MAX_ERROR_CHARS = 2000;
    /** Width of the consumer column, in characters. */
    private static final int MAX_SCOPE_CHARS = 255;
    /** How often an entry may change under us between an INSERT that conflicted and the read after it. */
    private static final int MAX_RACE_LOOPS = 5;

    private static final Logger log = LoggerFactory.getLogger(Inbox.class);

    private final String consumer;
    private final TxboxTables tables;
    private final int maxAttempts;
    private final int maxPayloadBytes;
    private final Fingerprint fingerprint;
    private final Duration retention;
    private final Clock clock;
    private final int transactionRetries;
    private final InboxListener listener;
    private final InboxSql sql;
    private final String tenantPrefix;

    InboxImpl(Inbox.Builder b) {
        this.consumer = b.consumer;
        this.tables = b.tables;
        this.maxAttempts = b.maxAttempts;
        this.maxPayloadBytes = b.maxPayloadBytes;
        this.fingerprint = b.fingerprint;
        this.retention = b.retention;
        this.clock = b.clock;
        this.transactionRetries = b.transactionRetries;
        this.listener = b.listener;
        long leaseMicros = TimeUnit.NANOSECONDS.toMicros(b.lease.toNanos());
        this.sql = new InboxSql(tables, maxAttempts, leaseMicros, PURGE_BATCH);
        this.tenantPrefix = consumer + "@";
    }

    @Override
    public String consumer() {
        return consumer;
    }

    @Override
    public Fingerprint fingerprint() {
        return fingerprint;
    }

    // ---- scope and input checks ----

    /**
     * Where an entry lives: the consumer column carries the tenant as {@code consumer@tenant}.
     * Unambiguous because a consumer name cannot contain {@code @}.
     */
    private record Scope(String column, String key, @Nullable String tenant) {}

    private Scope scope(String key, @Nullable String tenant) {
        KeyRules.check("message key", key);
        if (tenant == null) {
            return new Scope(consumer, key, null);
        }
        KeyRules.check("tenant", tenant);
        String column = tenantPrefix + tenant;
        if (column.length() > MAX_SCOPE_CHARS) {
            throw new InvalidInputException("tenant " + Texts.quote(tenant) + " is " + tenant.length()
                    + " characters; with consumer " + Texts.quote(consumer) + " the limit is "
                    + (MAX_SCOPE_CHARS - tenantPrefix.length()));
        }
        return new Scope(column, key, tenant);
    }

    private Scope check(InboundMessage m) {
        Args.notNull(m, "message");
        Scope s = scope(m.key(), m.tenant());
        if (m.payload().length > maxPayloadBytes) {
            throw new InvalidInputException("payload of key " + Texts.quote(m.key()) + " is " + m.payload().length
                    + " bytes, more than maxPayloadBytes " + maxPayloadBytes);
        }
        return s;
    }

    private void checkResult(Scope s, byte @Nullable [] result) {
        if (result != null && result.length > maxPayloadBytes) {
            throw new InvalidInputException("result for key " + Texts.quote(s.key) + " is " + result.length
                    + " bytes, more than maxPayloadBytes " + maxPayloadBytes);
        }
    }

    private byte @Nullable [] fingerprintOf(InboundMessage m) {
        return fingerprint.of(m);
    }

    // ---- atomic mode ----

    @Override
    public Receipt receive(Connection tx, InboundMessage message) {
        Args.notNull(tx, "tx");
        Scope s = check(message);
        byte[] fp = fingerprintOf(message);
        // Auto-commit would commit the entry before the business writes: the very gap the inbox closes.
        Transactions.requireTransaction(tx, what("receive", s));
        try {
            Receipt receipt = receiveIn(tx, s, fp);
            notify(receiptStatus(receipt));
            return receipt;
        } catch (KeyReuseException e) {
            notify(Outcome.Status.KEY_REUSED);
            throw e;
        } catch (SQLException e) {
            throw SqlErrors.translate(what("receive", s), e);
        }
    }

    private Receipt receiveIn(Connection tx, Scope s, byte @Nullable [] fp) throws SQLException {
        for (int i = 0; ; i++) {
            try (PreparedStatement ps = tx.prepareStatement(sql.receive.sql())) {
                ps.setString(1, s.column);
                ps.setString(2, s.key);
                ps.setBytes(3, fp);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        return new Receipt(Receipt.Status.FIRST, null, null, rs.getInt(1), null);
                    }
                }
            }
            // The INSERT hit an entry it may not take over; it holds that row's lock now, so
            // this read sees what blocked it.
            Entry e = read(tx, s);
            if (e != null) {
                checkFingerprint(e, fp, s);
                switch (e.status) {
                    case InboxSql.COMPLETED:
                        debug(s, "duplicate");
                        return new Receipt(Receipt.Status.DUPLICATE, e.result, e.resultStatus, e.attempts, null);
                    case InboxSql.DEAD:
                        return new Receipt(Receipt.Status.DEAD, null, null, e.attempts, e.lastError);
                    case InboxSql.PROCESSING:
                        if (e.leased) {
                            return new Receipt(Receipt.Status.IN_FLIGHT, null, null, e.attempts, null);
                        }
                        break;
                    default:
                        break;
                }
            }
            raced(s, i);
        }
    }

    @Override
    public void storeResult(Connection tx, InboundMessage message, byte[] result) {
        Args.notNull(tx, "tx");
        Args.notNull(result, "result");
        Scope s = check(message);
        checkResult(s, result);
        Transactions.requireTransaction(tx, what("store result", s));
        try {
            if (storeResultIn(tx, s, result) == 0) {
                throw new TxboxException("cannot store a result for " + what(s)
                        + ": receive did not report FIRST for it in this transaction (a result stored by an "
                        + "earlier transaction is never replaced); call receive in the same transaction first "
                        + "and store only when it reports FIRST");
            }
        } catch (SQLException e) {
            throw SqlErrors.translate(what("store result", s), e);
        }
    }

    private int storeResultIn(Connection tx, Scope s, byte[] result) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(sql.storeResult.sql())) {
            ps.setBytes(1, result);
            ps.setString(2, s.column);
            ps.setString(3, s.key);
            return ps.executeUpdate();
        }
    }

    @Override
    public Outcome process(DataSource ds, InboundMessage message, Handler handler) {
        Args.notNull(ds, "ds");
        Args.notNull(handler, "handler");
        Scope s = check(message);
        byte[] fp = fingerprintOf(message);
        Throwable handlerError = null;
        for (int attempt = 0; handlerError == null; attempt++) {
            boolean lastTry = attempt >= transactionRetries;
            try (Connection c = ds.getConnection()) {
                boolean autoCommit = c.getAutoCommit();
                boolean done = false;
                try {
                    if (autoCommit) {
                        c.setAutoCommit(false);
                    }
                    Receipt receipt;
                    try {
                        receipt = receiveIn(c, s, fp);
                    } catch (KeyReuseException e) {
                        return report(new Outcome(Outcome.Status.KEY_REUSED, null, 0, e.getMessage(), null));
                    }
                    if (!receipt.isFirst()) {
                        return report(outcomeOf(receipt));
                    }
                    byte[] result;
                    try {
                        result = handler.handle(c, message);
                    } catch (Exception e) {
                        try {
                            c.rollback();
                        } catch (SQLException lost) {
                            // The connection died under the handler: nothing committed, and the
                            // handler is not to blame, so no attempt is counted.
                            e.addSuppressed(lost);
                            throw new RetryableException(what("process", s)
                                    + " lost its database connection; nothing was committed: " + e, e);
                        }
                        done = true;
                        if (isConflict(e) && !lastTry) {
                            debug(s, "handler hit a serialization failure or deadlock; retrying");
                            continue;
                        }
                        handlerError = e;
                        continue;
                    }
                    // Refused as documented, outside the handler's failure path: the finally
                    // rolls everything back and no attempt is counted, so no row is written.
                    checkResult(s, result);
                    if (result != null) {
                        storeResultIn(c, s, result);
                    }
                    c.commit();
                    done = true;
                    return report(new Outcome(Outcome.Status.PROCESSED, result, receipt.attempts(), null, null));
                } finally {
                    if (!done) {
                        rollbackQuietly(c);
                    }
                    if (autoCommit) {
                        restoreAutoCommit(c);
                    }
                }
            } catch (SQLException e) {
                if (isConflict(e) && !lastTry) {
                    debug(s, "transaction hit a serialization failure or deadlock; retrying");
                    continue;
                }
                throw SqlErrors.translate(what("process", s), e);
            }
        }
        // The business transaction is closed, so the failure is counted on a fresh connection.
        return recordFailure(ds, message, handlerError);
    }

    private static Outcome outcomeOf(Receipt r) {
        return switch (r.status()) {
            case FIRST -> new Outcome(Outcome.Status.PROCESSED, null, r.attempts(), null, null);
            case DUPLICATE -> new Outcome(Outcome.Status.DUPLICATE, r.result(), r.attempts(), null, null);
            case IN_FLIGHT -> new Outcome(Outcome.Status.IN_FLIGHT, null, r.attempts(), null, null);
            case DEAD -> new Outcome(Outcome.Status.DEAD, null, r.attempts(), r.reason(), null);
        };
    }

    private static Outcome.Status receiptStatus(Receipt r) {
        return switch (r.status()) {
            case FIRST -> Outcome.Status.PROCESSED;
            case DUPLICATE -> Outcome.Status.DUPLICATE;
            case IN_FLIGHT -> Outcome.Status.IN_FLIGHT;
            case DEAD -> Outcome.Status.DEAD;
        };
    }

    private static boolean isConflict(Throwable e) {
        SQLException sqlError = SqlErrors.findSql(e);
        String state = sqlError == null ? null : sqlError.getSQLState();
        return "40001".equals(state) || "40P01".equals(state);
    }

    @Override
    public Outcome recordFailure(DataSource ds, InboundMessage message, Throwable error) {
        Args.notNull(ds, "ds");
        Args.notNull(error, "error");
        Scope s = check(message);
        byte[] fp = fingerprintOf(message);
        String reason = describe(error);
        Outcome outcome = inOwnTransaction(ds, what("record failure", s), c -> {
            for (int i = 0; ; i++) {
                try (PreparedStatement ps = c.prepareStatement(sql.recordFailure.sql())) {
                    ps.setString(1, s.column);
                    ps.setString(2, s.key);
                    ps.setBytes(3, fp);
                    ps.setString(4, reason);
                    try (ResultSet rs = ps.executeQuery()) {
                        if (rs.next()) {
                            boolean dead = InboxSql.DEAD.equals(rs.getString(1));
                            int attempts = rs.getInt(2);
                            logFailure(s, dead, attempts, rs.getInt(3), reason);
                            return new Outcome(dead ? Outcome.Status.DEAD : Outcome.Status.FAILED, null,
                                    attempts, reason, error);
                        }
                    }
                }
                Entry e = read(c, s);
                if (e != null) {
                    if (!sameFingerprint(e, fp)) {
                        return new Outcome(Outcome.Status.KEY_REUSED, null, e.attempts,
                                new KeyReuseException(consumer, s.key, s.tenant).getMessage(), error);
                    }
                    switch (e.status) {
                        case InboxSql.COMPLETED:
                            return new Outcome(Outcome.Status.DUPLICATE, e.result, e.attempts, null, null);
                        case InboxSql.DEAD:
                            return new Outcome(Outcome.Status.DEAD, null, e.attempts, e.lastError, error);
                        case InboxSql.PROCESSING:
                            if (e.leased) {
                                return new Outcome(Outcome.Status.IN_FLIGHT, null, e.attempts, null, error);
                            }
                            break;
                        default:
                            break;
                    }
                }
                raced(s, i);
            }
        });
        return report(outcome);
    }

    // ---- two-phase mode ----

    @Override
    public Claim claim(DataSource ds, InboundMessage message) {
        Args.notNull(ds, "ds");
        Scope s = check(message);
        byte[] fp = fingerprintOf(message);
        Claim claim;
        try {
            claim = inOwnTransaction(ds, what("claim", s), c -> {
                for (int i = 0; ; i++) {
                    try (PreparedStatement ps = c.prepareStatement(sql.claim.sql())) {
                        ps.setString(1, s.column);
                        ps.setString(2, s.key);
                        ps.setBytes(3, fp);
                        try (ResultSet rs = ps.executeQuery()) {
                            if (rs.next()) {
                                int attempts = rs.getInt(2);
                                if (InboxSql.DEAD.equals(rs.getString(1))) {
                                    return claimOf(s, Claim.Status.DEAD, attempts, null, null, rs.getString(4));
                                }
                                Instant until = rs.getObject(3, OffsetDateTime.class).toInstant();
                                return claimOf(s, Claim.Status.ACQUIRED, attempts, until, null, null);
                            }
                        }
                    }
                    Entry e = read(c, s);
                    if (e != null) {
                        checkFingerprint(e, fp, s);
                        switch (e.status) {
                            case InboxSql.COMPLETED:
                                return claimOf(s, Claim.Status.DUPLICATE, e.attempts, null, e, null);
                            case InboxSql.DEAD:
                                return claimOf(s, Claim.Status.DEAD, e.attempts, null, null, e.lastError);
                            case InboxSql.PROCESSING:
                                if (e.leased) {
                                    return claimOf(s, Claim.Status.IN_FLIGHT, e.attempts, null, null, null);
                                }
                                break;
                            default:
                                break;
                        }
                    }
                    raced(s, i);
                }
            });
        } catch (KeyReuseException e) {
            notify(Outcome.Status.KEY_REUSED);
            throw e;
        }
        switch (claim.status()) {
            case ACQUIRED -> debug(s, "claimed");
            case IN_FLIGHT -> notify(Outcome.Status.IN_FLIGHT);
            case DUPLICATE -> notify(Outcome.Status.DUPLICATE);
            case DEAD -> {
                log.warn("{} - key {} is DEAD: {}", consumer, label(s), claim.reason());
                notify(Outcome.Status.DEAD);
            }
        }
        return claim;
    }

    private Claim claimOf(Scope s, Claim.Status status, int attempts, @Nullable Instant leaseUntil,
            @Nullable Entry stored, @Nullable String reason) {
        return new Claim(consumer, s.key, s.tenant, status, attempts, leaseUntil,
                stored == null ? null : stored.result, stored == null ? null : stored.resultStatus,
                stored == null ? Map.of() : stored.headers(), reason);
    }

    private Scope checkClaim(Claim claim) {
        Args.notNull(claim, "claim");
        if (!claim.consumer().equals(consumer)) {
            throw new IllegalArgumentException("claim belongs to consumer " + Texts.quote(claim.consumer())
                    + ", not " + Texts.quote(consumer));
        }
        if (!claim.acquired()) {
            throw new IllegalArgumentException("only an ACQUIRED claim can be completed, failed or released, but "
                    + "this one is " + claim.status());
        }
        return scope(claim.key(), claim.tenant());
    }

    @Override
    public void complete(DataSource ds, Claim claim, byte @Nullable [] result) {
        Args.notNull(ds, "ds");
        Scope s = checkClaim(claim);
        checkResult(s, result);
        inOwnTransaction(ds, what("complete", s), c -> completeIn(c, s, claim, result, null, null));
    }

    @Override
    public void complete(Connection tx, Claim claim, byte @Nullable [] result) {
        Args.notNull(tx, "tx");
        Scope s = checkClaim(claim);
        checkResult(s, result);
        Transactions.requireTransaction(tx, what("complete", s));
        try {
            completeIn(tx, s, claim, result, null, null);
        } catch (SQLException e) {
            throw SqlErrors.translate(what("complete", s), e);
        }
    }

    @Override
    public void complete(DataSource ds, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders,
            byte[] body) {
        Args.notNull(ds, "ds");
        Args.notNull(resultHeaders, "resultHeaders");
        Args.notNull(body, "body");
        Scope s = checkClaim(claim);
        checkResult(s, body);
        inOwnTransaction(ds, what("complete", s), c -> completeIn(c, s, claim, body, resultStatus, resultHeaders));
    }

    @Override
    public void complete(Connection tx, Claim claim, int resultStatus, Map<String, List<String>> resultHeaders,
            byte[] body) {
        Args.notNull(tx, "tx");
        Args.notNull(resultHeaders, "resultHeaders");
        Args.notNull(body, "body");
        Scope s = checkClaim(claim);
        checkResult(s, body);
        Transactions.requireTransaction(tx, what("complete", s));
        try {
            completeIn(tx, s, claim, body, resultStatus, resultHeaders);
        } catch (SQLException e) {
            throw SqlErrors.translate(what("complete", s), e);
        }
    }

    private Void completeIn(Connection c, Scope s, Claim claim, byte @Nullable [] result,
            @Nullable Integer resultStatus, @Nullable Map<String, List<String>> headers) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.complete.sql())) {
            ps.setBytes(1, result);
            if (resultStatus == null) {
                ps.setNull(2, Types.INTEGER);
            } else {
                ps.setInt(2, resultStatus);
            }
            if (headers == null || headers.isEmpty()) {
                ps.setNull(3, Types.ARRAY);
                ps.setNull(4, Types.ARRAY);
            } else {
                List<String> names = new ArrayList<>();
                List<String> values = new ArrayList<>();
                headers.forEach((name, vs) -> vs.forEach(v -> {
                    names.add(name);
                    values.add(v);
                }));
                ps.setArray(3, textArray(c, names));
                ps.setArray(4, textArray(c, values));
            }
            bindFence(ps, 5, s, claim);
            if (ps.executeUpdate() == 0) {
                throw leaseLost(s, claim);
            }
        }
        debug(s, "completed");
        notify(Outcome.Status.PROCESSED);
        return null;
    }

    @Override
    public Outcome fail(DataSource ds, Claim claim, Throwable error) {
        Args.notNull(ds, "ds");
        Args.notNull(error, "error");
        Scope s = checkClaim(claim);
        String reason = describe(error);
        Outcome outcome = inOwnTransaction(ds, what("fail", s), c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.fail.sql())) {
                ps.setString(1, reason);
                bindFence(ps, 2, s, claim);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        throw leaseLost(s, claim);
                    }
                    boolean dead = InboxSql.DEAD.equals(rs.getString(1));
                    logFailure(s, dead, rs.getInt(2), rs.getInt(3), reason);
                    return new Outcome(dead ? Outcome.Status.DEAD : Outcome.Status.FAILED, null, rs.getInt(2), reason,
                            error);
                }
            }
        });
        return report(outcome);
    }

    @Override
    public void release(DataSource ds, Claim claim) {
        Args.notNull(ds, "ds");
        Scope s = checkClaim(claim);
        inOwnTransaction(ds, what("release", s), c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.release.sql())) {
                bindFence(ps, 1, s, claim);
                if (ps.executeUpdate() == 0) {
                    throw leaseLost(s, claim);
                }
            }
            return null;
        });
        debug(s, "released");
    }

    private static void bindFence(PreparedStatement ps, int from, Scope s, Claim claim) throws SQLException {
        ps.setString(from, s.column);
        ps.setString(from + 1, s.key);
        ps.setInt(from + 2, claim.fencingToken());
        ps.setObject(from + 3, OffsetDateTime.ofInstant(Objects.requireNonNull(claim.leaseUntil()), ZoneOffset.UTC));
    }

    private LeaseLostException leaseLost(Scope s, Claim claim) {
        log.warn("{} - key {} lost its claim (fencing token {}): taken over, nothing written",
                consumer, label(s), claim.fencingToken());
        return new LeaseLostException(consumer, s.key, claim.fencingToken());
    }

    private static Array textArray(Connection c, List<String> values) throws SQLException {
        return c.createArrayOf("text", values.toArray(new String[0]));
    }

    // ---- operators ----

    @Override
    public boolean resetDead(DataSource ds, String key) {
        Args.notNull(ds, "ds");
        Args.notNull(key, "key");
        return resetDead(ds, key, null);
    }

    @Override
    public boolean resetDead(DataSource ds, String key, @Nullable String tenant) {
        Args.notNull(ds, "ds");
        Args.notNull(key, "key");
        Scope s = scope(key, tenant);
        boolean reset = inOwnTransaction(ds, what("reset dead", s), c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.resetDead.sql())) {
                ps.setString(1, s.column);
                ps.setString(2, s.key);
                return ps.executeUpdate() > 0;
            }
        });
        if (reset) {
            log.info("{} - key {} reset from DEAD: the next delivery runs again", consumer, label(s));
        }
        return reset;
    }

    @Override
    public List<DeadEntry> listDead(DataSource ds, int limit) {
        Args.notNull(ds, "ds");
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, but was " + limit);
        }
        return inOwnTransaction(ds, consumer + " - list dead entries", c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.listDead.sql())) {
                bindConsumer(ps, 1);
                ps.setInt(4, limit);
                List<DeadEntry> dead = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        String column = rs.getString(1);
                        String tenant = column.equals(consumer) ? null : column.substring(tenantPrefix.length());
                        dead.add(new DeadEntry(rs.getString(2), tenant, rs.getInt(3), rs.getString(4),
                                rs.getObject(5, OffsetDateTime.class).toInstant()));
                    }
                }
                return List.copyOf(dead);
            }
        });
    }

    private void bindConsumer(PreparedStatement ps, int from) throws SQLException {
        ps.setString(from, consumer);
        ps.setInt(from + 1, tenantPrefix.length());
        ps.setString(from + 2, tenantPrefix);
    }

    // ---- retention ----

    @Override
    public int purgeCompleted(DataSource ds) {
        Args.notNull(ds, "ds");
        OffsetDateTime cutoff = OffsetDateTime.ofInstant(clock.instant().minus(retention), ZoneOffset.UTC);
        int total = 0;
        int batch;
        do {
            batch = inOwnTransaction(ds, consumer + " - purge completed entries", c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.purge.sql())) {
                    ps.setObject(1, cutoff);
                    bindConsumer(ps, 2);
                    return ps.executeUpdate();
                }
            });
            total += batch;
        } while (batch == PURGE_BATCH);
        if (total > 0) {
            log.info("{} - purged {} completed entries older than {} (retention {})", consumer, total, cutoff, retention);
        }
        return total;
    }

    @Override
    public RetentionTask retentionTask(DataSource ds, Duration every) {
        Args.notNull(ds, "ds");
        Args.notNull(every, "every");
        if (every.isNegative() || every.isZero()) {
            throw new IllegalArgumentException("every must be positive, but was " + every);
        }
        return new Retention(ds, every);
    }

    private final class Retention implements RetentionTask {
        private final ScheduledExecutorService executor;
        private final AtomicLong purged = new AtomicLong();

        Retention(DataSource ds, Duration every) {
            executor = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "txbox-inbox-retention-" + consumer);
                t.setDaemon(true);
                return t;
            });
            executor.scheduleWithFixedDelay(() -> {
                try {
                    purged.addAndGet(purgeCompleted(ds));
                } catch (RuntimeException e) {
                    log.warn("{} - retention run failed, trying again in {}: {}", consumer, every, e.toString());
                }
            }, 0, every.toNanos(), TimeUnit.NANOSECONDS);
        }

        @Override
        public long purged() {
            return purged.get();
        }

        @Override
        public void close() {
            executor.shutdown();
            try {
                if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
                    executor.shutdownNow();
                }
            } catch (InterruptedException e) {
                executor.shutdownNow();
                Thread.currentThread().interrupt();
            }
        }
    }

    // ---- shared plumbing ----

    /** One row of the inbox, as the fallback read after a conflicting INSERT sees it. */
    private record Entry(String status, byte @Nullable [] fingerprint, byte @Nullable [] result,
            @Nullable Integer resultStatus, String @Nullable [] headerNames, String @Nullable [] headerValues,
            int attempts, @Nullable String lastError, boolean leased) {

        Map<String, List<String>> headers() {
            if (headerNames == null || headerValues == null) {
                return Map.of();
            }
            Map<String, List<String>> headers = new LinkedHashMap<>();
            for (int i = 0; i < headerNames.length && i < headerValues.length; i++) {
                headers.computeIfAbsent(headerNames[i], n -> new ArrayList<>()).add(headerValues[i]);
            }
            headers.replaceAll((n, vs) -> List.copyOf(vs));
            return Collections.unmodifiableMap(headers);
        }
    }

    private @Nullable Entry read(Connection c, Scope s) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.read.sql())) {
            ps.setString(1, s.column);
            ps.setString(2, s.key);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                int rstatus = rs.getInt(4);
                Integer resultStatus = rs.wasNull() ? null : rstatus;
                return new Entry(rs.getString(1), rs.getBytes(2), rs.getBytes(3), resultStatus,
                        strings(rs.getArray(5)), strings(rs.getArray(6)), rs.getInt(7), rs.getString(8),
                        rs.getBoolean(9));
            }
        }
    }

    private static String @Nullable [] strings(@Nullable Array array) throws SQLException {
        return array == null ? null : (String[]) array.getArray();
    }

    private static boolean sameFingerprint(Entry e, byte @Nullable [] fp) {
        return e.fingerprint == null || fp == null || Arrays.equals(e.fingerprint, fp);
    }

    private void checkFingerprint(Entry e, byte @Nullable [] fp, Scope s) {
        if (!sameFingerprint(e, fp)) {
            log.warn("{} - key {} reused with a different payload fingerprint; refused", consumer, label(s));
            throw new KeyReuseException(consumer, s.key, s.tenant);
        }
    }

    private void raced(Scope s, int loop) {
        if (loop + 1 >= MAX_RACE_LOOPS) {
            throw new RetryableException(what(s) + " kept changing under concurrent deliveries; try again", null);
        }
    }

    @FunctionalInterface
    private interface SqlWork<T> {
        T run(Connection c) throws SQLException;
    }

    /** Runs {@code work} on a connection of its own and commits it, whatever mode the pool hands out. */
    private static <T> T inOwnTransaction(DataSource ds, String what, SqlWork<T> work) {
        Objects.requireNonNull(ds, "ds");
        try (Connection c = ds.getConnection()) {
            if (c.getAutoCommit()) {
                return work.run(c);
            }
            boolean done = false;
            try {
                T result = work.run(c);
                c.commit();
                done = true;
                return result;
            } finally {
                if (!done) {
                    rollbackQuietly(c);
                }
            }
        } catch (SQLException e) {
            throw SqlErrors.translate(what, e);
        }
    }

    /**
     * Best effort: after a lost connection the pool has already closed it, and an error here
     * must not hide the one that matters (a retryable 57P01 or 08xxx).
     */
    private static void restoreAutoCommit(Connection c) {
        try {
            if (!c.isClosed()) {
                c.setAutoCommit(true);
            }
        } catch (SQLException e) {
            log.debug("restoring auto-commit failed: {}", e.toString());
        }
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException e) {
            log.debug("rollback failed: {}", e.toString());
        }
    }

    /** The error as stored in {@code last_error}: class and message, no stack, no NUL (PostgreSQL text refuses it). */
    static String describe(Throwable error) {
        String message = error.getMessage();
        String text = error.getClass().getName() + (message == null ? "" : ": " + message);
        text = text.replace('\0', ' ');
        return text.length() <= MAX_ERROR_CHARS ? text : text.substring(0, MAX_ERROR_CHARS - 3) + "...";
    }

    private Outcome report(Outcome outcome) {
        notify(outcome.status());
        return outcome;
    }

    private void notify(Outcome.Status status) {
        try {
            listener.onOutcome(consumer, status);
        } catch (RuntimeException e) {
            log.warn("{} - inbox listener failed on {}: {}", consumer, status, e.toString());
        }
    }

    private void logFailure(Scope s, boolean dead, int attempts, int failures, String reason) {
        if (dead) {
            log.error("{} - key {} is DEAD after attempt {} (failure {} of {}); parked for an operator. Last error: {}",
                    consumer, label(s), attempts, failures, maxAttempts, reason);
        } else {
            log.warn("{} - key {} failed on attempt {} (failure {} of {}): {}", consumer, label(s), attempts, failures,
                    maxAttempts, reason);
        }
    }

    private void debug(Scope s, String event) {
        if (log.isDebugEnabled()) {
            log.debug("{} - key {} {}", consumer, label(s), event);
        }
    }

    private static String label(Scope s) {
        return Texts.quote(s.key) + (s.tenant == null ? "" : " (tenant " + Texts.quote(s.tenant) + ")");
    }

    private String what(Scope s) {
        return "consumer " + Texts.quote(consumer) + " key " + label(s);
    }

    private String what(String action, Scope s) {
        return "inbox " + action + " for " + what(s);
    }
}
