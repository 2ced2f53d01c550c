/**
 * RabbitMQ for the relay: {@link io.txbox.relay.rabbitmq.RabbitPublisher}, with publisher
 * confirms, {@code mandatory} publishing and persistent messages. Needs {@code
 * com.rabbitmq:amqp-client} on the classpath.
 */
@NullMarked
package io.txbox.relay.rabbitmq;

import org.jspecify.annotations.NullMarked;
