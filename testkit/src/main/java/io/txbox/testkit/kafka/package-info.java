/**
 * The entry point of the child JVM that runs a test Kafka broker. Not an API: tests use {@link
 * io.txbox.testkit.KafkaBroker}.
 */
@NullMarked
package io.txbox.testkit.kafka;

import org.jspecify.annotations.NullMarked;
