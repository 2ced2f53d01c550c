/**
 * Micrometer meters for the relay: {@link io.txbox.relay.micrometer.RelayMetrics}. Needs {@code
 * io.micrometer:micrometer-core} on the classpath; nothing else in the relay loads it.
 */
@NullMarked
package io.txbox.relay.micrometer;

import org.jspecify.annotations.NullMarked;
