/**
 * Spring Boot auto-configuration for txbox: {@link io.txbox.TxboxTables}, {@link
 * io.txbox.outbox.Outbox} and {@link io.txbox.inbox.Inbox} beans from {@code txbox.*}
 * properties, the txbox migrations at startup, and {@link io.txbox.spring.TxboxTemplate}, which
 * runs txbox inside Spring transactions.
 */
@NullMarked
package io.txbox.spring;

import org.jspecify.annotations.NullMarked;
