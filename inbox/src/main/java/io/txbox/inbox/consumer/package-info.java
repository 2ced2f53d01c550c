/**
 * The mechanism every txbox broker consumer shares: turn a delivery into an inbox
 * transaction and a decision (ack, retry later, dead-letter). The Kafka and RabbitMQ adapters
 * ({@code io.txbox.inbox.kafka}, {@code io.txbox.inbox.rabbitmq}) only translate decisions into
 * broker calls. An adapter for another broker can use {@link io.txbox.inbox.consumer.DeliveryProcessor}
 * the same way.
 *
 * <p>No argument of the builders ({@code KafkaInboxConsumer.builder}, {@code RabbitInboxConsumer.builder}
 * and their options), {@link io.txbox.inbox.consumer.Backoff}, {@link io.txbox.inbox.consumer.Delivery},
 * {@link io.txbox.inbox.consumer.Decision}, {@link io.txbox.inbox.consumer.DeliveryProcessor#process}
 * or {@link io.txbox.inbox.micrometer.MicrometerConsumerListener} may be null unless its Javadoc says
 * what null means: a null is refused before any I/O with {@link io.txbox.ConfigException} (builder
 * options and {@code Backoff}) or {@link io.txbox.InvalidInputException} (the rest), naming the
 * parameter.
 */
@NullMarked
package io.txbox.inbox.consumer;

import org.jspecify.annotations.NullMarked;
