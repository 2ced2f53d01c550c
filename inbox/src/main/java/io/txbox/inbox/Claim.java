package io.txbox.inbox;

import io.txbox.Texts;
import io.txbox.internal.Args;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What {@link Inbox#claim} got for a message in two-phase mode. Only an {@link Status#ACQUIRED}
 * claim may be completed or failed; its {@link #fencingToken()} makes sure a worker whose
 * lease was taken over cannot write anything.
 *
 * <p>Arrays are not copied; do not change them. {@link #toString()} never shows their content.
 */
public final class Claim {
    /** How a claim turned out. */
    public enum Status {
        /** This worker now holds the entry until {@link #leaseUntil()}: do the work, then complete or fail. */
        ACQUIRED,
        /** Another worker holds a live lease: try again later. */
        IN_FLIGHT,
        /** An earlier delivery completed; {@link #result()} holds what it stored. */
        DUPLICATE,
        /** The key failed too often; {@link #reason()} says why. */
        DEAD
    }

    private final String consumer;
    private final String key;
    private final @Nullable String tenant;
    private final Status status;
    private final int fencingToken;
    private final @Nullable Instant leaseUntil;
    private final byte @Nullable [] result;
    private final @Nullable Integer resultStatus;
    private final Map<String, List<String>> resultHeaders;
    private final @Nullable String reason;

    Claim(String consumer, String key, @Nullable String tenant, Status status, int fencingToken,
            @Nullable Instant leaseUntil, byte @Nullable [] result, @Nullable Integer resultStatus,
            Map<String, List<String>> resultHeaders, @Nullable String reason) {
        this.consumer = consumer;
        this.key = key;
        this.tenant = tenant;
        this.status = Objects.requireNonNull(status);
        this.fencingToken = fencingToken;
        this.leaseUntil = leaseUntil;
        this.result = result;
        this.resultStatus = resultStatus;
        this.resultHeaders = resultHeaders;
        this.reason = reason;
    }

    /**
     * A claim as another {@link Inbox} implementation or claim store reports it (a Redis store,
     * a cache in front of the database inbox). Completing or failing it is still fenced by the
     * store that made it, so a forged claim cannot write anything.
     *
     * @param resultHeaders {@code null} becomes empty
     */
    public static Claim of(String consumer, String key, @Nullable String tenant, Status status, int fencingToken,
            @Nullable Instant leaseUntil, byte @Nullable [] result, @Nullable Integer resultStatus,
            @Nullable Map<String, List<String>> resultHeaders, @Nullable String reason) {
        return new Claim(Args.notNull(consumer, "consumer"), Args.notNull(key, "key"), tenant,
                Args.notNull(status, "status"), fencingToken, leaseUntil, result, resultStatus,
                resultHeaders == null ? Map.of() : resultHeaders, reason);
    }

    /** The consumer of the inbox that made this claim. */
    public String consumer() {
        return consumer;
    }

    public String key() {
        return key;
    }

    public @Nullable String tenant() {
        return tenant;
    }

    public Status status() {
        return status;
    }

    /** {@code status() == ACQUIRED}. */
    public boolean acquired() {
        return status == Status.ACQUIRED;
    }

    /**
     * The attempt number this claim holds (1 for the first claim of a key, then one more for
     * each takeover or retry). Complete and fail succeed only while the entry is still at this
     * attempt. For other statuses: the entry's attempts so far.
     */
    public int fencingToken() {
        return fencingToken;
    }

    /** For ACQUIRED: when the lease runs out, in database time; otherwise {@code null}. */
    public @Nullable Instant leaseUntil() {
        return leaseUntil;
    }

    /** For DUPLICATE: the stored result body, if any. */
    public byte @Nullable [] result() {
        return result;
    }

    /** For DUPLICATE: the stored status code (HTTP), if any. */
    public @Nullable Integer resultStatus() {
        return resultStatus;
    }

    /** For DUPLICATE: the stored headers, in stored order; empty if none. */
    public Map<String, List<String>> resultHeaders() {
        return resultHeaders;
    }

    /** For DEAD: the last error recorded. */
    public @Nullable String reason() {
        return reason;
    }

    @Override
    public String toString() {
        return "Claim[" + status + ", consumer=" + Texts.quote(consumer) + ", key=" + Texts.quote(key)
                + (tenant == null ? "" : ", tenant=" + Texts.quote(tenant))
                + ", fencingToken=" + fencingToken
                + (leaseUntil == null ? "" : ", leaseUntil=" + leaseUntil)
                + (result == null ? "" : ", result=" + result.length + " bytes")
                + (resultStatus == null ? "" : ", resultStatus=" + resultStatus)
                + (reason == null ? "" : ", reason=" + reason) + "]";
    }
}
