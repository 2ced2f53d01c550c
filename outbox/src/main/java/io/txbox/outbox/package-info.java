/**
 * The producer side: {@link io.txbox.outbox.Outbox} writes {@link io.txbox.outbox.OutboxMessage}s
 * under {@link io.txbox.outbox.StepKey}s inside the caller's transaction.
 */
@NullMarked
package io.txbox.outbox;

import org.jspecify.annotations.NullMarked;
