/**
 * The standalone relay process ({@code relay-standalone/target/txbox-relay.jar}, module
 * {@code txbox-relay-standalone}): {@link
 * io.txbox.relay.standalone.RelayConfig} (a properties file plus {@code TXBOX_*} environment,
 * validated at start), {@link io.txbox.relay.standalone.StandaloneRelay} (pool, publishers,
 * relay, {@code /health} and Prometheus {@code /metrics} on the JDK HTTP server, graceful
 * SIGTERM). The jar's command line, {@code io.txbox.relay.cli}, builds on this package, never
 * the other way round. A program, not a library: HikariCP, the PostgreSQL driver, Micrometer's
 * Prometheus registry, Jackson, picocli and logback are this module's dependencies only, so a
 * service that embeds the relay library ({@code txbox-relay}) gets none of them.
 */
@NullMarked
package io.txbox.relay.standalone;

import org.jspecify.annotations.NullMarked;
