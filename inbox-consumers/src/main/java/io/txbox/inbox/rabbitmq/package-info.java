/**
 * A RabbitMQ consumer that runs each message through an inbox and a handler in one database
 * transaction and acks only afterwards. Entry point:
 * {@link io.txbox.inbox.rabbitmq.RabbitInboxConsumer#builder}. Needs {@code com.rabbitmq:amqp-client}
 * on the classpath (an optional dependency of txbox-inbox-consumers).
 */
@NullMarked
package io.txbox.inbox.rabbitmq;

import org.jspecify.annotations.NullMarked;
