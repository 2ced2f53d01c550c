/**
 * The relay: claims committed outbox rows and publishes them to Kafka or RabbitMQ, deleting a
 * row only after the broker confirmed it.
 *
 * <p>Entry point: {@link io.txbox.relay.Relay#builder()}. Brokers plug in through the small
 * {@link io.txbox.relay.Publisher} SPI ({@code io.txbox.relay.kafka.KafkaPublisher},
 * {@code io.txbox.relay.rabbitmq.RabbitPublisher}). Dead letters are listed and retried with
 * {@link io.txbox.relay.DeadLetters}.
 */
@NullMarked
package io.txbox.relay;

import org.jspecify.annotations.NullMarked;
