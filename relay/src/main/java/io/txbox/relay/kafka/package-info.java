/**
 * Kafka for the relay: {@link io.txbox.relay.kafka.KafkaPublisher}, an idempotent producer with
 * {@code acks=all}. Needs {@code org.apache.kafka:kafka-clients} on the classpath.
 */
@NullMarked
package io.txbox.relay.kafka;

import org.jspecify.annotations.NullMarked;
