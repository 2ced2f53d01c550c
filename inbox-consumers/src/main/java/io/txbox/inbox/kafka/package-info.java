/**
 * A Kafka consumer that runs each record through an inbox and a handler in one database
 * transaction and commits offsets only afterwards. Entry point:
 * {@link io.txbox.inbox.kafka.KafkaInboxConsumer#builder}. Needs {@code org.apache.kafka:kafka-clients}
 * on the classpath (an optional dependency of txbox-inbox-consumers).
 */
@NullMarked
package io.txbox.inbox.kafka;

import org.jspecify.annotations.NullMarked;
