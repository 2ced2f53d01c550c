package io.txbox.relay;

import io.txbox.ConfigException;
import io.txbox.Texts;

/**
 * Where rows of one destination go: a publisher and the broker-side target (Kafka topic,
 * RabbitMQ exchange). Made by {@code KafkaPublisher.topic(..)} or {@code
 * RabbitPublisher.exchange(..)}, or by {@link #of} for a custom publisher.
 *
 * @param publisher the publisher to use
 * @param target the topic or exchange name, non-empty
 */
public record Route(Publisher publisher, String target) {
    public Route {
        if (publisher == null) {
            throw new ConfigException("route publisher must not be null");
        }
        if (target == null || target.isBlank()) {
            throw new ConfigException("route target must be a non-blank topic or exchange name, but was "
                    + (target == null ? "null" : Texts.quote(target)));
        }
    }

    public static Route of(Publisher publisher, String target) {
        return new Route(publisher, target);
    }

    @Override
    public String toString() {
        return publisher.broker() + ":" + target;
    }
}
