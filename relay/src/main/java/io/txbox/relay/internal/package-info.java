/**
 * The relay's machinery, the same for every broker: lane leases ({@link
 * io.txbox.relay.internal.LaneLeases}), the claim and settle SQL ({@link
 * io.txbox.relay.internal.OutboxClaims}), the batch loop ({@link
 * io.txbox.relay.internal.Worker}). Not API: may change in any release.
 */
@NullMarked
package io.txbox.relay.internal;

import org.jspecify.annotations.NullMarked;
