/**
 * The standalone relay process ({@code relay/target/txbox-relay.jar}): {@link
 * io.txbox.relay.standalone.RelayConfig} (a properties file plus {@code TXBOX_*} environment,
 * validated at start), {@link io.txbox.relay.standalone.StandaloneRelay} (pool, publishers,
 * relay, {@code /health} and Prometheus {@code /metrics} on the JDK HTTP server, graceful
 * SIGTERM). The jar's command line, {@code io.txbox.relay.cli}, builds on this package, never
 * the other way round. Needs the optional dependencies
 * HikariCP, the PostgreSQL driver, Micrometer's Prometheus registry, Jackson and logback, which
 * the shaded jar carries; a service that embeds the relay library never loads this package.
 */
@NullMarked
package io.txbox.relay.standalone;

import org.jspecify.annotations.NullMarked;
