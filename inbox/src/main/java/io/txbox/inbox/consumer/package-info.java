/**
 * The mechanism every txbox broker consumer shares: turn a delivery into an inbox
 * transaction and a decision (ack, retry later, dead-letter). The Kafka and RabbitMQ adapters
 * ({@code io.txbox.inbox.kafka}, {@code io.txbox.inbox.rabbitmq}) only translate decisions into
 * broker calls. An adapter for another broker can use {@link io.txbox.inbox.consumer.DeliveryProcessor}
 * the same way.
 */
@NullMarked
package io.txbox.inbox.consumer;

import org.jspecify.annotations.NullMarked;
