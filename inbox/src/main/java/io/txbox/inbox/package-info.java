/**
 * The consumer side of txbox: records each incoming message's key so that a redelivered
 * message has no second effect. Entry point: {@link io.txbox.inbox.Inbox#builder(String)}.
 */
@NullMarked
package io.txbox.inbox;

import org.jspecify.annotations.NullMarked;
