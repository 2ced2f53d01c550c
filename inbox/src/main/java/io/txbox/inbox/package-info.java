/**
 * The consumer side of txbox: records each incoming message's key so that a redelivered
 * message has no second effect. Entry point: {@link io.txbox.inbox.Inbox#builder(String)}.
 *
 * <h2>Databases</h2>
 * PostgreSQL, MariaDB 10.6+ and MySQL 8.0+. Building an inbox needs no connection: the first
 * call reads which database its connection talks to and the inbox keeps that database's SQL, so
 * one inbox serves one database (a database it does not support is refused with
 * {@link io.txbox.ConfigException} naming what it found and what it needs). The guarantees are the same
 * on each; where the databases differ (isolation levels, how {@link Inbox#storeResult} knows the
 * transaction), the method says so.
 *
 * <h2>Spring transactions</h2>
 * With {@code spring-tx} on the classpath, and without the starter, the calls that would split a
 * Spring transaction's commit refuse with {@link IllegalStateException} before any database work:
 * {@link Inbox#process} and {@link Inbox#processChained} inside an active Spring transaction (they commit
 * the entry and the handler's work apart from it, so an outer rollback would leave the entry
 * completed and the work undone), and every call that takes a {@link javax.sql.DataSource}, given a
 * {@code TransactionAwareDataSourceProxy} inside an active Spring transaction (its commit would
 * commit the Spring transaction halfway). Run the work in the Spring transaction instead:
 * {@code TxboxTemplate.process} (txbox-spring-boot-starter), or {@link Inbox#receive} on the
 * Spring-managed connection ({@code DataSourceUtils.getConnection}). The two-phase calls and
 * {@link Inbox#recordFailure} on a plain {@link javax.sql.DataSource} still commit on their own inside a
 * Spring transaction, as documented. Without {@code spring-tx} nothing of Spring is loaded and
 * the checks cost nothing.
 */
@NullMarked
package io.txbox.inbox;

import org.jspecify.annotations.NullMarked;
