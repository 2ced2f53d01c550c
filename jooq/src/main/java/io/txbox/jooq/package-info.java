/**
 * {@link io.txbox.jooq.TxboxJooq}: inbox and outbox calls inside a transaction of the
 * application's own jOOQ {@code DSLContext}.
 */
@NullMarked
package io.txbox.jooq;

import org.jspecify.annotations.NullMarked;
