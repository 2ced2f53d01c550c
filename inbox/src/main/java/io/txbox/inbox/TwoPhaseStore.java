package io.txbox.inbox;

import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.TxboxException;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Two-phase claims of one consumer, wherever they are kept: the protocol for side effects that
 * cannot join a database transaction (a payment gateway, an HTTP request). {@link #claim} a
 * message, do the work, then {@link #complete}, {@link #fail} or {@link #release} with the
 * claim, whose fencing token makes sure a worker whose lease was taken over writes nothing.
 *
 * <p>Two stores implement it: the database inbox's two-phase mode, through
 * {@link Inbox#twoPhase(javax.sql.DataSource)} (each call one short transaction of its own,
 * leases in database time), and {@code RedisStore} of the {@code txbox-redis} module (each call
 * one Lua script, leases in Redis time; weaker, see its documentation). Whatever takes a
 * {@code TwoPhaseStore} (the HTTP helper, the consumer runners) runs on either.
 *
 * <p>What every implementation guarantees:
 * <ul>
 *   <li>at most one live lease per key: concurrent claims of a key give exactly one
 *       {@link Claim.Status#ACQUIRED}, the others {@link Claim.Status#IN_FLIGHT};
 *   <li>a completed key gives {@link Claim.Status#DUPLICATE} with its stored result (and status
 *       and headers, when completed with a response) until the store's retention ends;
 *   <li>the same key with another payload {@linkplain #fingerprint() fingerprint} is refused
 *       with {@link KeyReuseException}, never replayed;
 *   <li>a lease that runs out counts a failure and the next claim takes the key over with a
 *       greater fencing token; after {@code maxAttempts} failures the key is
 *       {@link Claim.Status#DEAD}; a {@link #release} is not a failure;
 *   <li>{@code complete}, {@code fail} and {@code release} of a claim that was taken over throw
 *       {@link LeaseLostException} and write nothing.
 * </ul>
 *
 * <p>Implementations are thread-safe. A null argument (where none is marked {@code @Nullable})
 * is refused with {@link InvalidInputException} naming the parameter. A store that could not be
 * reached throws {@link TxboxException}, or {@link RetryableException} when calling again may
 * succeed.
 */
public interface TwoPhaseStore {
    /** The consumer whose claims this store keeps. */
    String consumer();

    /**
     * How this store fingerprints payloads, so that a caller can check before it relies on a
     * reused key being refused (the HTTP helper needs the method and path covered).
     */
    Fingerprint fingerprint();

    /**
     * Claims {@code message} for this worker: ACQUIRED with a lease (and the fencing token in
     * {@link Claim#fencingToken()}), or IN_FLIGHT, DUPLICATE or DEAD. An ACQUIRED claim is
     * already stored when this returns.
     *
     * @throws InvalidInputException if the key, tenant or payload is refused; nothing is written
     * @throws KeyReuseException if the key was seen with a different payload fingerprint
     */
    Claim claim(InboundMessage message);

    /**
     * Completes an acquired claim, storing {@code result} for later duplicates.
     *
     * @throws InvalidInputException if {@code result} is larger than the store accepts; nothing is written
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    void complete(Claim claim, byte @Nullable [] result);

    /**
     * Completes an acquired claim with a response to replay: a status code, headers (in order;
     * a name may repeat) and a body.
     *
     * @throws InvalidInputException if {@code body} is larger than the store accepts; nothing is written
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    void complete(Claim claim, int resultStatus, Map<String, List<String>> resultHeaders, byte[] body);

    /**
     * Fails an acquired claim: counts a failure and records {@code error}; the key becomes
     * FAILED (the next claim runs it again) or DEAD at its {@code maxAttempts}-th failure.
     *
     * @return an outcome of status FAILED or DEAD, with the attempts so far
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    Outcome fail(Claim claim, Throwable error);

    /**
     * Gives an acquired claim back without counting a failure, so the next claim runs again
     * at once; for outcomes that must not be remembered, such as an HTTP 5xx. The next claim
     * still gets a greater fencing token.
     *
     * @throws LeaseLostException if the claim was taken over; nothing is written
     */
    void release(Claim claim);

    /**
     * The parked ordering keys kept next to this store's claims, for consumers built with
     * {@code parkKeys(true)}; {@code null} (the default) when the store keeps none: such a
     * consumer is refused when built. The database inbox's store keeps them
     * ({@link Inbox#parkedKeys}); the Redis and DynamoDB stores do not.
     */
    default @Nullable ParkedKeys parkedKeys() {
        return null;
    }
}
