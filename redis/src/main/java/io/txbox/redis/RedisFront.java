package io.txbox.redis;

import static io.txbox.redis.Keys.bytes;
import static io.txbox.redis.Keys.number;
import static io.txbox.redis.Keys.text;
import static io.txbox.redis.RedisLink.utf8;

import io.txbox.Texts;
import io.txbox.inbox.Claim;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.InboundMessage;
import io.txbox.internal.Args;
import io.txbox.internal.StoredHeaders;
import io.txbox.redis.RedisLink.Script;
import io.txbox.redis.RedisListener.Answer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Redis side of a {@link HybridInbox}: the check in front of the database inbox (a Lua
 * script that answers a completed key from its cached result, an in-flight one IN_FLIGHT, and
 * marks a new one), the caching of what the database committed, the markers it must replace or
 * remove, the circuit breaker, and this process's own memory of recent completions and running
 * deliveries.
 */
final class RedisFront implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(HybridInbox.class);

    /**
     * KEYS: entry. ARGV: fingerprint, marker TTL ms. A completed entry comes back with its
     * fields; a marker as 'P'; otherwise a marker is set and 'A' returned.
     */
    static final Script FRONT = new Script("hybrid-front", """
            local e = redis.call('HMGET', KEYS[1], 's', 'f')
            if e[1] == 'C' then
              local v = redis.call('HMGET', KEYS[1], 'r', 'rs', 'h', 'a')
              local has = 0
              if v[1] then has = 1 end
              return {'C', e[2] or '', has, v[1] or '', v[2] or '', v[3] or '', v[4] or '0'}
            end
            if e[1] == 'P' then return {'P', e[2] or ''} end
            redis.call('HSET', KEYS[1], 's', 'P', 'f', ARGV[1])
            redis.call('PEXPIRE', KEYS[1], ARGV[2])
            return {'A'}
            """);

    /**
     * KEYS: entry. ARGV: fingerprint, TTL ms, has result (1/0), result, status ('' none), headers,
     * attempts, fingerprint from the marker (1/0). A two-phase completion does not know the
     * payload: it takes the fingerprint the marker recorded, and caches nothing without one.
     */
    static final Script STORE = new Script("hybrid-store", """
            local f = ARGV[1]
            if ARGV[8] == '1' then
              f = redis.call('HGET', KEYS[1], 'f')
              if not f then return {0} end
            end
            redis.call('DEL', KEYS[1])
            redis.call('HSET', KEYS[1], 's', 'C', 'f', f, 'a', ARGV[7])
            if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'r', ARGV[4]) end
            if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'rs', ARGV[5]) end
            if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'h', ARGV[6]) end
            redis.call('PEXPIRE', KEYS[1], ARGV[2])
            return {1}
            """);

    /** KEYS: entries. Removes their markers, never a cached completion. */
    static final Script UNMARK = new Script("hybrid-unmark", """
            for _, k in ipairs(KEYS) do
              if redis.call('HGET', k, 's') == 'P' then redis.call('DEL', k) end
            end
            return {1}
            """);

    /** Most keys remembered for a late {@link #UNMARK} (see {@link #stale}); beyond it a marker lasts its TTL. */
    static final int MAX_STALE = 10_000;
    /** Keys per {@link #UNMARK} call when the remembered ones are cleared. */
    private static final int UNMARK_BATCH = 100;

    private final String consumer;
    private final String prefix;
    private final byte[] inFlightArg;
    private final byte[] cacheTtlArg;
    private final int maxCachedResultBytes;
    private final boolean answerInFlight;
    private final Fingerprint fingerprint;
    private final RedisListener listener;
    private final CircuitBreaker breaker;
    private final RedisLink link;
    /**
     * Deliveries of {@code process} this process is running, by Redis entry (ISO-8859-1, so
     * lossless): their duplicates in this process are answered IN_FLIGHT as the Redis marker
     * would answer them, without a round trip. Only the delivery that set the Redis marker puts
     * an entry here, and removes its own entry once the marker is replaced or removed.
     */
    private final ConcurrentHashMap<String, Running> running = new ConcurrentHashMap<>();
    /** Completions this process committed, answered without Redis for min(cacheTtl, inFlightTtl). */
    private final LocalResults recent;
    /**
     * Entries (ISO-8859-1) that may hold a marker nobody will replace: the write that should have
     * replaced or removed it failed without reaching Redis for certain. Their markers are removed
     * as soon as Redis answers again (after a successful call or a reconnect), not left for
     * {@code inFlightTtl} to answer completed keys IN_FLIGHT.
     */
    private final Set<String> stale = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean clearing = new AtomicBoolean();
    private volatile String lastFailure = "none";

    /** A delivery this process runs; identity matters (see {@link #running}). */
    static final class Running {
        final byte[] fp;

        Running(byte[] fp) {
            this.fp = fp;
        }
    }

    RedisFront(HybridInbox.Builder b, String consumer, Fingerprint fingerprint) {
        this.consumer = consumer;
        this.prefix = b.keyPrefix;
        this.inFlightArg = utf8(Long.toString(Math.max(1, b.inFlightTtl.toMillis())));
        this.cacheTtlArg = utf8(Long.toString(b.cacheTtl.toMillis()));
        this.maxCachedResultBytes = b.maxCachedResultBytes;
        this.answerInFlight = b.answerInFlight;
        this.recent = new LocalResults(b.clock, b.cacheTtl.compareTo(b.inFlightTtl) < 0 ? b.cacheTtl : b.inFlightTtl);
        this.fingerprint = fingerprint;
        this.listener = b.listener;
        this.breaker = new CircuitBreaker(b.failureThreshold, b.openFor, b.clock, this::breakerMoved);
        this.link = new RedisLink("hybrid-inbox " + consumer, b.redisUrl, b.commandTimeout);
        link.onReconnect(this::clearStale);
        link.preload(FRONT, STORE, UNMARK);
    }

    BreakerState breakerState() {
        return breaker.state();
    }

    @Override
    public void close() {
        link.close();
    }

    /** The delivery that set {@code f}'s marker, now running here; {@code null} unless MARKED. */
    @Nullable Running running(Front f) {
        if (f.kind() != Front.Kind.MARKED) {
            return null;
        }
        Running mine = new Running(f.fp());
        running.put(local(Objects.requireNonNull(f.key())), mine);
        return mine;
    }

    /** {@code mine} ({@link #running}) is over. */
    void ran(Front f, @Nullable Running mine) {
        if (mine != null) {
            running.remove(local(Objects.requireNonNull(f.key())), mine);
        }
    }

    /** Remembers and caches a completion of {@code f}'s key that the database committed. */
    void completed(Front f, byte @Nullable [] result, int attempts) {
        byte[] key = Objects.requireNonNull(f.key());
        if (result == null || result.length <= maxCachedResultBytes) {
            recent.put(local(key), f.fp(), result, attempts);
        }
        cache(key, f.fp(), result, null, null, attempts, "cache");
    }

    /** The Redis entry of a claim's key. */
    byte[] keyOf(Claim claim) {
        return Keys.entry(prefix, Keys.CACHE, consumer, claim.key(), claim.tenant());
    }

    /**
     * What the front script said. MARKED: this delivery set the in-flight marker and must
     * replace or remove it. UNKNOWN: the script failed or timed out, so it may still run once
     * Redis catches up and leave a marker on a key the database has completed by then; the
     * delivery replaces or removes it as if it were MARKED.
     */
    record Front(Kind kind, byte @Nullable [] key, byte[] fp, byte @Nullable [] result,
            @Nullable Integer resultStatus, Map<String, List<String>> headers, int attempts) {
        enum Kind { HIT, IN_FLIGHT, MARKED, UNKNOWN, MISS }
    }

    /** Asks Redis (or this process's memory) about {@code message} before the database does. */
    Front check(InboundMessage message) {
        Args.notNull(message, "message");
        // Same key rules and messages as the database inbox, before anything is written anywhere.
        byte[] key = Keys.entry(prefix, Keys.CACHE, consumer, message.key(), message.tenant());
        byte[] fpOrNull = fingerprint.of(message);
        byte[] fp = fpOrNull == null ? new byte[0] : fpOrNull;
        String localKey = local(key);
        LocalResults.Result done = recent.get(localKey, fp);
        if (done != null) {
            answer(Answer.HIT);
            return new Front(Front.Kind.HIT, key, fp, done.result(), null, Map.of(), done.attempts());
        }
        Running local = answerInFlight ? running.get(localKey) : null;
        if (local != null && sameFingerprint(local.fp, fp)) {
            answer(Answer.IN_FLIGHT);
            return new Front(Front.Kind.IN_FLIGHT, key, fp, null, null, Map.of(), 0);
        }
        if (!breaker.allow()) {
            answer(Answer.SKIPPED);
            return new Front(Front.Kind.MISS, null, fp, null, null, Map.of(), 0);
        }
        List<Object> r;
        try {
            r = link.run(FRONT, new byte[][] {key}, fp, inFlightArg);
            succeeded();
        } catch (RuntimeException e) {
            failed("check", message.key(), e);
            answer(Answer.ERROR);
            return new Front(Front.Kind.UNKNOWN, key, fp, null, null, Map.of(), 0);
        }
        String s = text(r.get(0));
        if (s.equals("A")) {
            answer(Answer.MISS);
            return new Front(Front.Kind.MARKED, key, fp, null, null, Map.of(), 0);
        }
        if (!sameFingerprint(bytes(r.get(1)), fp)) {
            // The database decides a reused key (KEY_REUSED, 422); never answered from the cache.
            answer(Answer.MISS);
            return new Front(Front.Kind.MISS, null, fp, null, null, Map.of(), 0);
        }
        if (s.equals("P")) {
            if (!answerInFlight) {
                answer(Answer.MISS);
                return new Front(Front.Kind.MISS, null, fp, null, null, Map.of(), 0);
            }
            answer(Answer.IN_FLIGHT);
            return new Front(Front.Kind.IN_FLIGHT, key, fp, null, null, Map.of(), 0);
        }
        answer(Answer.HIT);
        byte[] result = number(r.get(2)) == 1 ? bytes(r.get(3)) : null;
        String rs = text(r.get(4));
        return new Front(Front.Kind.HIT, key, fp, result, rs.isEmpty() ? null : Integer.valueOf(rs),
                StoredHeaders.decode(bytes(r.get(5))), (int) number(r.get(6)));
    }

    private static String local(byte[] key) {
        return new String(key, StandardCharsets.ISO_8859_1);
    }

    private static boolean sameFingerprint(byte[] stored, byte[] fp) {
        return stored.length == 0 || fp.length == 0 || Arrays.equals(stored, fp);
    }

    /** Caches a completion the database has committed; too large a result only clears the marker. */
    void cache(byte[] key, byte @Nullable [] fp, byte @Nullable [] result, @Nullable Integer resultStatus,
            @Nullable Map<String, List<String>> headers, int attempts, String what) {
        if (result != null && result.length > maxCachedResultBytes) {
            unmark(key, what);
            return;
        }
        tidy(what, key, STORE, fp == null ? new byte[0] : fp, cacheTtlArg, utf8(result == null ? "0" : "1"),
                result == null ? new byte[0] : result, utf8(resultStatus == null ? "" : resultStatus.toString()),
                StoredHeaders.encode(headers), utf8(Integer.toString(attempts)), utf8(fp == null ? "1" : "0"));
    }

    void unmark(byte[] key, String what) {
        tidy(what, key, UNMARK);
    }

    /**
     * Replaces or removes a marker this delivery may have left; never skipped, or the marker would
     * answer a completed key IN_FLIGHT until it expires. With the breaker closed it is a call
     * like any other. With the breaker open it is written without waiting for the reply: on a
     * Redis that is only slow it still runs after the marker, in the connection's order. A write
     * that fails is not known to have reached Redis, so the key is remembered in {@link #stale}.
     */
    private void tidy(String what, byte[] key, Script script, byte[]... args) {
        byte[][] keys = {key};
        if (breaker.allow()) {
            try {
                link.run(script, keys, args);
                succeeded();
            } catch (RuntimeException e) {
                failed(what, null, e);
                remember(key);
            }
            return;
        }
        link.runAsync(script, keys, args).whenComplete((r, e) -> {
            if (e != null) {
                remember(key);
            }
        });
    }

    private void remember(byte[] key) {
        if (stale.size() < MAX_STALE) {
            stale.add(local(key));
        } else if (log.isDebugEnabled()) {
            log.debug("{} - {} keys already wait for their in-flight marker to be removed; this one's expires"
                    + " after inFlightTtl", consumer, MAX_STALE);
        }
    }

    /** Removes the markers of {@link #stale} keys, a batch at a time, without waiting; one clearing at a time. */
    private void clearStale() {
        if (stale.isEmpty() || !clearing.compareAndSet(false, true)) {
            return;
        }
        List<String> batch = new ArrayList<>(UNMARK_BATCH);
        for (Iterator<String> it = stale.iterator(); it.hasNext() && batch.size() < UNMARK_BATCH; ) {
            String k = it.next();
            it.remove();
            batch.add(k);
        }
        if (batch.isEmpty()) {
            clearing.set(false);
            return;
        }
        byte[][] keys = batch.stream().map(k -> k.getBytes(StandardCharsets.ISO_8859_1)).toArray(byte[][]::new);
        link.runAsync(UNMARK, keys).whenComplete((r, e) -> {
            clearing.set(false);
            if (e != null) {
                for (byte[] k : keys) {
                    remember(k);
                }
            } else if (!stale.isEmpty()) {
                clearStale();
            }
        });
    }

    private void succeeded() {
        breaker.success();
        if (!stale.isEmpty()) {
            clearStale();
        }
    }

    private void failed(String what, @Nullable String key, RuntimeException e) {
        lastFailure = RedisLink.describe(e);
        breaker.failure();
        if (log.isDebugEnabled()) {
            log.debug("{} - Redis {} failed{}; the database answers instead: {}", consumer, what,
                    key == null ? "" : " for key " + Texts.quote(key), lastFailure);
        }
    }

    private void answer(Answer a) {
        try {
            listener.onAnswer(consumer, a);
        } catch (RuntimeException e) {
            log.warn("{} - Redis listener failed on {}: {}", consumer, a, e.toString());
        }
    }

    private void breakerMoved(BreakerState from, BreakerState to) {
        if (to == BreakerState.OPEN) {
            log.warn("{} - Redis keeps failing: circuit breaker {} -> {}; deliveries go straight to the database."
                    + " Last failure: {}", consumer, from, to, lastFailure);
        } else {
            log.info("{} - circuit breaker {} -> {}", consumer, from, to);
        }
        try {
            listener.onBreakerState(consumer, from, to);
        } catch (RuntimeException e) {
            log.warn("{} - Redis listener failed on breaker state {}: {}", consumer, to, e.toString());
        }
    }
}
