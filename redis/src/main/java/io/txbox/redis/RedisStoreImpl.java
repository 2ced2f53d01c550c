package io.txbox.redis;

import io.txbox.internal.StoredHeaders;
import static io.txbox.redis.Keys.bytes;
import static io.txbox.redis.Keys.number;
import static io.txbox.redis.Keys.text;
import static io.txbox.redis.RedisLink.utf8;

import io.lettuce.core.RedisException;
import io.txbox.RetryableException;
import io.txbox.Texts;
import io.txbox.TxboxException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.Outcome;
import io.txbox.internal.Args;
import io.txbox.internal.ErrorTexts;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link RedisStore} on one Lettuce connection; every call is one Lua script. */
final class RedisStoreImpl implements RedisStore {
    private static final Logger log = LoggerFactory.getLogger(RedisStore.class);

    private final String consumer;
    private final String prefix;
    private final int maxAttempts;
    private final byte[] maxAttemptsArg;
    private final byte[] leaseArg;
    private final byte[] retentionArg;
    private final int maxResultBytes;
    private final Fingerprint fingerprint;
    private final byte[] fenceKey;
    private final RedisLink link;

    RedisStoreImpl(RedisStore.Builder b) {
        this.consumer = b.consumer;
        this.prefix = b.keyPrefix;
        this.maxAttempts = b.maxAttempts;
        this.maxAttemptsArg = utf8(Integer.toString(b.maxAttempts));
        this.leaseArg = utf8(Long.toString(Math.max(1, b.lease.toMillis())));
        this.retentionArg = utf8(Long.toString(b.retention.toMillis()));
        this.maxResultBytes = b.maxResultBytes;
        this.fingerprint = b.fingerprint;
        this.fenceKey = utf8(prefix + Keys.STORE + consumer + "|fence");
        this.link = new RedisLink("redis-store " + consumer, b.redisUrl, b.commandTimeout);
        link.preload(StoreScripts.all());
    }

    @Override
    public String consumer() {
        return consumer;
    }

    @Override
    public Fingerprint fingerprint() {
        return fingerprint;
    }

    @Override
    public Claim claim(InboundMessage message) {
        Args.notNull(message, "message");
        byte[] key = Keys.entry(prefix, Keys.STORE, consumer, message.key(), message.tenant());
        byte[] fp = fingerprint.of(message);
        List<Object> r = call("claim", message.key(),
                () -> link.run(StoreScripts.CLAIM, new byte[][] {key, fenceKey}, fp == null ? new byte[0] : fp,
                        leaseArg, maxAttemptsArg, retentionArg));
        String status = text(r.get(0));
        String k = message.key();
        String tenant = message.tenant();
        switch (status) {
            case "A": {
                long token = number(r.get(2));
                if (token > Integer.MAX_VALUE) {
                    throw new TxboxException("the fencing counter of consumer " + Texts.quote(consumer)
                            + " passed 2^31-1; delete Redis key " + Texts.quote(new String(fenceKey,
                            java.nio.charset.StandardCharsets.UTF_8)) + " only once no claim is in flight");
                }
                Instant until = Instant.ofEpochMilli(number(r.get(3)));
                debug(k, "claimed with fencing token " + token);
                return Claim.of(consumer, k, tenant, Claim.Status.ACQUIRED, (int) token, until, null, null, null, null);
            }
            case "I":
                return Claim.of(consumer, k, tenant, Claim.Status.IN_FLIGHT, (int) number(r.get(1)), null, null, null,
                        null, null);
            case "C": {
                byte[] result = number(r.get(2)) == 1 ? bytes(r.get(3)) : null;
                String rs = text(r.get(4));
                Integer resultStatus = rs.isEmpty() ? null : Integer.valueOf(rs);
                return Claim.of(consumer, k, tenant, Claim.Status.DUPLICATE, (int) number(r.get(1)), null, result,
                        resultStatus, StoredHeaders.decode(bytes(r.get(5))), null);
            }
            case "D": {
                String reason = text(r.get(2));
                log.warn("{} - key {} is DEAD: {}", consumer, Texts.quote(k), reason);
                return Claim.of(consumer, k, tenant, Claim.Status.DEAD, (int) number(r.get(1)), null, null, null, null,
                        reason);
            }
            case "M":
                log.warn("{} - key {} reused with a different payload fingerprint; refused", consumer, Texts.quote(k));
                throw new KeyReuseException(consumer, k, tenant);
            default:
                throw new TxboxException("unexpected reply " + Texts.quote(status) + " from the claim script");
        }
    }

    @Override
    public void complete(Claim claim, byte @Nullable [] result) {
        completeWith(claim, result, null, null);
    }

    @Override
    public void complete(Claim claim, int resultStatus, Map<String, List<String>> resultHeaders, byte[] body) {
        Args.notNull(body, "body");
        Args.notNull(resultHeaders, "resultHeaders");
        completeWith(claim, body, resultStatus, resultHeaders);
    }

    private void completeWith(Claim claim, byte @Nullable [] result, @Nullable Integer resultStatus,
            @Nullable Map<String, List<String>> headers) {
        byte[] key = checkClaim(claim);
        if (result != null && result.length > maxResultBytes) {
            throw Keys.resultTooLarge(claim.key(), result.length, maxResultBytes, "maxResultBytes");
        }
        List<Object> r = call("complete", claim.key(), () -> link.run(StoreScripts.COMPLETE, new byte[][] {key},
                token(claim), retentionArg, utf8(result == null ? "0" : "1"), result == null ? new byte[0] : result,
                utf8(resultStatus == null ? "" : resultStatus.toString()), StoredHeaders.encode(headers)));
        if (number(r.get(0)) == 0) {
            throw leaseLost(claim);
        }
        debug(claim.key(), "completed");
    }

    @Override
    public Outcome fail(Claim claim, Throwable error) {
        byte[] key = checkClaim(claim);
        Args.notNull(error, "error");
        String reason = ErrorTexts.describe(error);
        List<Object> r = call("fail", claim.key(), () -> link.run(StoreScripts.FAIL, new byte[][] {key},
                token(claim), maxAttemptsArg, utf8(reason), retentionArg));
        String s = text(r.get(0));
        if (s.equals("L")) {
            throw leaseLost(claim);
        }
        int attempts = (int) number(r.get(1));
        boolean dead = s.equals("D");
        if (dead) {
            log.error("{} - key {} is DEAD after attempt {} of {}; parked for an operator. Last error: {}", consumer,
                    Texts.quote(claim.key()), attempts, maxAttempts, reason);
        } else {
            log.warn("{} - key {} failed on attempt {} of {}: {}", consumer, Texts.quote(claim.key()), attempts,
                    maxAttempts, reason);
        }
        return new Outcome(dead ? Outcome.Status.DEAD : Outcome.Status.FAILED, null, attempts, reason, error);
    }

    @Override
    public void release(Claim claim) {
        byte[] key = checkClaim(claim);
        List<Object> r = call("release", claim.key(),
                () -> link.run(StoreScripts.RELEASE, new byte[][] {key}, token(claim), retentionArg));
        if (number(r.get(0)) == 0) {
            throw leaseLost(claim);
        }
        debug(claim.key(), "released");
    }

    @Override
    public boolean resetDead(String key, @Nullable String tenant) {
        byte[] entry = Keys.entry(prefix, Keys.STORE, consumer, key, tenant);
        List<Object> r = call("reset dead", key,
                () -> link.run(StoreScripts.RESET_DEAD, new byte[][] {entry}, retentionArg));
        boolean reset = number(r.get(0)) == 1;
        if (reset) {
            log.info("{} - key {} reset from DEAD: the next claim runs it again", consumer, Texts.quote(key));
        }
        return reset;
    }

    @Override
    public void close() {
        link.close();
    }

    private byte[] checkClaim(Claim claim) {
        Args.notNull(claim, "claim");
        if (!claim.consumer().equals(consumer)) {
            throw new IllegalArgumentException("claim belongs to consumer " + Texts.quote(claim.consumer())
                    + ", not " + Texts.quote(consumer));
        }
        if (!claim.acquired()) {
            throw new IllegalArgumentException("only an ACQUIRED claim can be completed, failed or released, but "
                    + "this one is " + claim.status());
        }
        return Keys.entry(prefix, Keys.STORE, consumer, claim.key(), claim.tenant());
    }

    private static byte[] token(Claim claim) {
        return utf8(Integer.toString(claim.fencingToken()));
    }

    private LeaseLostException leaseLost(Claim claim) {
        log.warn("{} - key {} lost its claim (fencing token {}): taken over or expired, nothing written", consumer,
                Texts.quote(claim.key()), claim.fencingToken());
        return new LeaseLostException(consumer, claim.key(), claim.fencingToken());
    }

    private List<Object> call(String action, String key, Supplier<List<Object>> script) {
        try {
            return script.get();
        } catch (RedisException e) {
            throw new RetryableException("redis store " + action + " for consumer " + Texts.quote(consumer) + " key "
                    + Texts.quote(key) + " failed; it may or may not have taken effect, call it again: "
                    + RedisLink.describe(e), e);
        }
    }

    private void debug(String key, String event) {
        if (log.isDebugEnabled()) {
            log.debug("{} - key {} {}", consumer, Texts.quote(key), event);
        }
    }
}
