/**
 * What every txbox broker consumer shares: the options of their builders
 * ({@link io.txbox.inbox.consumer.ConsumerBuilder}), the handle a running consumer is closed
 * through ({@link io.txbox.inbox.consumer.InboxConsumer}), the {@link
 * io.txbox.inbox.consumer.KeyPolicy}, the {@link io.txbox.inbox.consumer.DeadLetterHeaders} a
 * dead letter carries and the {@link io.txbox.inbox.consumer.ConsumerListener} that hears
 * outcomes (with {@link io.txbox.inbox.consumer.micrometer.MicrometerConsumerListener}), and the {@link
 * io.txbox.inbox.consumer.TwoPhaseHandler} of a consumer on a two-phase store. The Kafka and
 * RabbitMQ consumers ({@code io.txbox.inbox.kafka}, {@code io.txbox.inbox.rabbitmq}) run every
 * delivery through one broker-neutral mechanism in {@code io.txbox.inbox.consumer.internal}
 * (not API) and only translate its decisions (ack, retry later, dead-letter) into broker calls.
 *
 * <p>No argument of the builders ({@code KafkaInboxConsumer.builder}, {@code RabbitInboxConsumer.builder}
 * and their options) or of {@link io.txbox.inbox.consumer.micrometer.MicrometerConsumerListener} may be
 * null unless its Javadoc says what null means: a null is refused before any I/O with
 * {@link io.txbox.ConfigException} (builder options) or {@link io.txbox.InvalidInputException}
 * (the rest), naming the parameter.
 */
@NullMarked
package io.txbox.inbox.consumer;

import org.jspecify.annotations.NullMarked;
