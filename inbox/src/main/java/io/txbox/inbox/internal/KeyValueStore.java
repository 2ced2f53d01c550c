package io.txbox.inbox.internal;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.inbox.Claim;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.internal.Args;
import io.txbox.internal.ErrorTexts;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;

/**
 * A two-phase store that keeps each entry under one key of a key-value store ({@code E}: how the
 * store names an entry). It checks every call and logs its outcome; a subclass only reads and
 * writes the entries, each write fenced by the claim's token.
 */
public abstract class KeyValueStore<E> implements TwoPhaseStore {
    protected final Logger log;
    protected final String consumer;
    protected final Fingerprint fingerprint;
    protected final int maxAttempts;
    protected final int maxResultBytes;

    protected KeyValueStore(Logger log, StoreOptions options) {
        this.log = log;
        this.consumer = options.consumer();
        this.fingerprint = options.fingerprint();
        this.maxAttempts = options.maxAttempts();
        this.maxResultBytes = options.maxResultBytes();
    }

    /** How the store names the entry of {@code key} and {@code tenant}. */
    protected abstract E entry(String key, @Nullable String tenant);

    /**
     * Stores the claim's outcome: COMPLETED with {@code result} (not larger than
     * {@code maxResultBytes}), and the response's status and headers when given.
     *
     * @return false if the fence no longer holds (the claim was taken over); then nothing is written
     */
    protected abstract boolean writeCompleted(E entry, Claim claim, byte @Nullable [] result,
            @Nullable Integer resultStatus, @Nullable Map<String, List<String>> headers);

    /**
     * Counts a failed attempt and records {@code reason}: FAILED, or DEAD at {@code maxAttempts}.
     *
     * @return the attempts so far and whether the key is DEAD, or null if the fence no longer holds
     */
    protected abstract @Nullable Failure writeFailed(E entry, Claim claim, String reason);

    /** Gives the claim back without counting an attempt; false if the fence no longer holds. */
    protected abstract boolean writeReleased(E entry, Claim claim);

    /** Makes a DEAD entry claimable with a fresh count of attempts; false if it was not DEAD. */
    protected abstract boolean writeResetDead(E entry, String key);

    /** What {@link #writeFailed} left: the attempts so far, and whether the key is now DEAD. */
    public record Failure(int attempts, boolean dead) {}

    @Override
    public final String consumer() {
        return consumer;
    }

    @Override
    public final Fingerprint fingerprint() {
        return fingerprint;
    }

    @Override
    public final void complete(Claim claim, byte @Nullable [] result) {
        completeWith(claim, result, null, null);
    }

    @Override
    public final void complete(Claim claim, int resultStatus, Map<String, List<String>> resultHeaders, byte[] body) {
        Args.notNull(body, "body");
        Args.notNull(resultHeaders, "resultHeaders");
        completeWith(claim, body, resultStatus, resultHeaders);
    }

    private void completeWith(Claim claim, byte @Nullable [] result, @Nullable Integer resultStatus,
            @Nullable Map<String, List<String>> headers) {
        E entry = checkClaim(claim);
        checkResult(claim, result);
        if (!writeCompleted(entry, claim, result, resultStatus, headers)) {
            throw leaseLost(claim);
        }
        debug(claim.key(), "completed");
    }

    @Override
    public final Outcome fail(Claim claim, Throwable error) {
        E entry = checkClaim(claim);
        Args.notNull(error, "error");
        String reason = ErrorTexts.describe(error);
        Failure failure = writeFailed(entry, claim, reason);
        if (failure == null) {
            throw leaseLost(claim);
        }
        if (failure.dead()) {
            log.error("{} - key {} is DEAD after attempt {} of {}; parked for an operator. Last error: {}", consumer,
                    Texts.quote(claim.key()), failure.attempts(), maxAttempts, reason);
        } else {
            log.warn("{} - key {} failed on attempt {} of {}: {}", consumer, Texts.quote(claim.key()),
                    failure.attempts(), maxAttempts, reason);
        }
        return new Outcome(failure.dead() ? Outcome.Status.DEAD : Outcome.Status.FAILED, null, failure.attempts(),
                reason, error);
    }

    @Override
    public final void release(Claim claim) {
        E entry = checkClaim(claim);
        if (!writeReleased(entry, claim)) {
            throw leaseLost(claim);
        }
        debug(claim.key(), "released");
    }

    /**
     * Makes a DEAD key claimable again with a fresh count of attempts.
     *
     * @return {@code false} if the key was not DEAD
     */
    public final boolean resetDead(String key, @Nullable String tenant) {
        boolean reset = writeResetDead(entry(key, tenant), key);
        if (reset) {
            log.info("{} - key {} reset from DEAD: the next claim runs it again", consumer, Texts.quote(key));
        }
        return reset;
    }

    /** Refuses a result larger than {@code maxResultBytes}, before anything is written. */
    protected final void checkResult(Claim claim, byte @Nullable [] result) {
        if (result != null && result.length > maxResultBytes) {
            throw new InvalidInputException("result for key " + Texts.quote(claim.key()) + " is " + result.length
                    + " bytes, more than maxResultBytes " + maxResultBytes);
        }
    }

    private E checkClaim(Claim claim) {
        Args.notNull(claim, "claim");
        if (!claim.consumer().equals(consumer)) {
            throw new IllegalArgumentException("claim belongs to consumer " + Texts.quote(claim.consumer())
                    + ", not " + Texts.quote(consumer));
        }
        if (!claim.acquired()) {
            throw new IllegalArgumentException("only an ACQUIRED claim can be completed, failed or released, but "
                    + "this one is " + claim.status());
        }
        return entry(claim.key(), claim.tenant());
    }

    private LeaseLostException leaseLost(Claim claim) {
        log.warn("{} - key {} lost its claim (fencing token {}): taken over or expired, nothing written", consumer,
                Texts.quote(claim.key()), claim.fencingToken());
        return new LeaseLostException(consumer, claim.key(), claim.fencingToken());
    }

    /** Logs {@code event} of {@code key} at debug level, with the consumer. */
    protected final void debug(String key, String event) {
        if (log.isDebugEnabled()) {
            log.debug("{} - key {} {}", consumer, Texts.quote(key), event);
        }
    }
}
