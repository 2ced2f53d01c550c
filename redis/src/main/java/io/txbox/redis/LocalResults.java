package io.txbox.redis;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The completions this process committed through {@link HybridInbox#process} in the last
 * {@code ttl}, so that a storm of duplicates arriving at this same process is answered without
 * a Redis round trip each. Holds only results the database committed, exactly what the Redis
 * cache would answer, and for no longer than the Redis cache would; bounded in result bytes,
 * oldest out first.
 */
final class LocalResults {
    /** Result bytes kept at most, over all entries: {@value}. */
    static final long MAX_BYTES = 8L << 20;

    /** A completed key as cached here. */
    record Result(byte[] fp, byte @Nullable [] result, int attempts, Instant expires) {
        long size() {
            return 64L + fp.length + (result == null ? 0 : result.length);
        }
    }

    private final Clock clock;
    private final Duration ttl;
    private final LinkedHashMap<String, Result> entries = new LinkedHashMap<>();
    private long bytes;

    LocalResults(Clock clock, Duration ttl) {
        this.clock = clock;
        this.ttl = ttl;
    }

    synchronized void put(String key, byte[] fp, byte @Nullable [] result, int attempts) {
        Result r = new Result(fp, result, attempts, clock.instant().plus(ttl));
        Result old = entries.remove(key);
        if (old != null) {
            bytes -= old.size();
        }
        entries.put(key, r);
        bytes += r.size();
        Iterator<Map.Entry<String, Result>> oldest = entries.entrySet().iterator();
        while (bytes > MAX_BYTES && oldest.hasNext()) {
            bytes -= oldest.next().getValue().size();
            oldest.remove();
        }
    }

    /** The live result of {@code key} if its fingerprint matches {@code fp} (an empty one matches any). */
    synchronized @Nullable Result get(String key, byte[] fp) {
        Result r = entries.get(key);
        if (r == null) {
            return null;
        }
        if (!clock.instant().isBefore(r.expires())) {
            entries.remove(key);
            bytes -= r.size();
            return null;
        }
        boolean same = r.fp().length == 0 || fp.length == 0 || Arrays.equals(r.fp(), fp);
        return same ? r : null;
    }
}
