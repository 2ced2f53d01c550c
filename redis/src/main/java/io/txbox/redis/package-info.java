/**
 * Redis for the inbox, in two shapes.
 *
 * <ul>
 *   <li>{@link io.txbox.redis.HybridInbox}: Redis in front of the database {@link
 *       io.txbox.inbox.Inbox}, as a cache of completed results and a marker of deliveries in
 *       flight. The database stays the source of truth; losing Redis only makes duplicates
 *       slower.
 *   <li>{@link io.txbox.redis.RedisStore}: two-phase claim / complete / fail / release kept in
 *       Redis alone, for work that has no relational database. Weaker than the database inbox:
 *       see the module README.
 * </ul>
 */
@NullMarked
package io.txbox.redis;

import org.jspecify.annotations.NullMarked;
