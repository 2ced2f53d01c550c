/**
 * Not API: the broker-neutral mechanism of the txbox consumers. {@link
 * io.txbox.inbox.consumer.internal.DeliveryProcessor} turns a {@link
 * io.txbox.inbox.consumer.internal.Delivery} into an inbox transaction and a {@link
 * io.txbox.inbox.consumer.internal.Decision} (ack, retry later, dead-letter); the Kafka and
 * RabbitMQ adapters only translate decisions into broker calls. A null argument is refused
 * with {@link io.txbox.InvalidInputException} naming the parameter.
 */
@NullMarked
package io.txbox.inbox.consumer.internal;

import org.jspecify.annotations.NullMarked;
