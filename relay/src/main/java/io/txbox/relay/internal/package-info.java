/**
 * The relay's machinery, the same for every broker. Not API: may change in any release.
 *
 * <ul>
 *   <li>lane ownership (membership, rebalance, lock, renew, fence, leave): {@link
 *       io.txbox.relay.internal.LaneOwnership};
 *   <li>every statement, the claim query among them, behind one seam per database: {@link
 *       io.txbox.relay.internal.RelayStore}, implemented for PostgreSQL by {@link
 *       io.txbox.relay.internal.PostgresRelayStore} (the claim query is its {@code claim});
 *   <li>the batch loop (lock lanes, claim, publish, settle, commit) and wake-ups: {@link
 *       io.txbox.relay.internal.Worker};
 *   <li>the broker calls of a batch and their outcomes: {@link io.txbox.relay.internal.BatchPublisher};
 *       what each outcome does to its row: {@link io.txbox.relay.internal.BatchSettler};
 *   <li>the relay's lifecycle, counters and health: {@link io.txbox.relay.internal.RelayEngine}.
 * </ul>
 */
@NullMarked
package io.txbox.relay.internal;

import org.jspecify.annotations.NullMarked;
