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
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.internal.KeyValueStore;
import io.txbox.internal.Args;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.LoggerFactory;

/** {@link RedisStore} on one Lettuce connection; every call is one Lua script. */
final class RedisStoreImpl extends KeyValueStore<byte[]> implements RedisStore {
    private final String prefix;
    private final byte[] maxAttemptsArg;
    private final byte[] leaseArg;
    private final byte[] retentionArg;
    private final byte[] fenceKey;
    private final RedisLink link;

    RedisStoreImpl(RedisStore.Builder b) {
        super(LoggerFactory.getLogger(RedisStore.class), b.options);
        this.prefix = b.keyPrefix;
        this.maxAttemptsArg = utf8(Integer.toString(maxAttempts));
        this.leaseArg = utf8(Long.toString(b.options.leaseMillis()));
        this.retentionArg = utf8(Long.toString(b.options.retentionMillis()));
        this.fenceKey = utf8(prefix + Keys.STORE + consumer + "|fence");
        this.link = new RedisLink("redis-store " + consumer, b.redisUrl, b.commandTimeout);
        link.preload(StoreScripts.all());
    }

    @Override
    public Claim claim(InboundMessage message) {
        Args.notNull(message, "message");
        byte[] key = entry(message.key(), message.tenant());
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
    protected byte[] entry(String key, @Nullable String tenant) {
        return Keys.entry(prefix, Keys.STORE, consumer, key, tenant);
    }

    @Override
    protected boolean writeCompleted(byte[] entry, Claim claim, byte @Nullable [] result,
            @Nullable Integer resultStatus, @Nullable Map<String, List<String>> headers) {
        List<Object> r = call("complete", claim.key(), () -> link.run(StoreScripts.COMPLETE, new byte[][] {entry},
                token(claim), retentionArg, utf8(result == null ? "0" : "1"), result == null ? new byte[0] : result,
                utf8(resultStatus == null ? "" : resultStatus.toString()), StoredHeaders.encode(headers)));
        return number(r.get(0)) != 0;
    }

    @Override
    protected @Nullable Failure writeFailed(byte[] entry, Claim claim, String reason) {
        List<Object> r = call("fail", claim.key(), () -> link.run(StoreScripts.FAIL, new byte[][] {entry},
                token(claim), maxAttemptsArg, utf8(reason), retentionArg));
        String s = text(r.get(0));
        return s.equals("L") ? null : new Failure((int) number(r.get(1)), s.equals("D"));
    }

    @Override
    protected boolean writeReleased(byte[] entry, Claim claim) {
        List<Object> r = call("release", claim.key(),
                () -> link.run(StoreScripts.RELEASE, new byte[][] {entry}, token(claim), retentionArg));
        return number(r.get(0)) != 0;
    }

    @Override
    protected boolean writeResetDead(byte[] entry, String key) {
        List<Object> r = call("reset dead", key,
                () -> link.run(StoreScripts.RESET_DEAD, new byte[][] {entry}, retentionArg));
        return number(r.get(0)) == 1;
    }

    @Override
    public void close() {
        link.close();
    }

    private static byte[] token(Claim claim) {
        return utf8(Integer.toString(claim.fencingToken()));
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
}
