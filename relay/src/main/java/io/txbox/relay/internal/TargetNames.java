package io.txbox.relay.internal;

import io.txbox.ConfigException;
import io.txbox.Texts;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The one home of the broker-side name rules: {@code KafkaPublisher.topic(..)},
 * {@code RabbitPublisher.exchange(..)} and the standalone relay's configuration all check
 * names here, so they accept exactly the same names.
 */
public final class TargetNames {
    private static final Pattern KAFKA_TOPIC = Pattern.compile("[a-zA-Z0-9._-]{1,249}");

    private TargetNames() {}

    /** A Kafka topic: 1-249 characters of {@code [a-zA-Z0-9._-]}, and neither {@code .} nor {@code ..}. */
    public static String kafkaTopic(@Nullable String topic) {
        if (topic == null || !KAFKA_TOPIC.matcher(topic).matches() || topic.equals(".") || topic.equals("..")) {
            throw new ConfigException("Kafka topic must be 1-249 characters of [a-zA-Z0-9._-] (not . or ..), but was "
                    + (topic == null ? "null" : Texts.quote(topic)));
        }
        return topic;
    }

    /** A RabbitMQ exchange: 1-255 characters, no control characters ({@code ""} is not allowed). */
    public static String rabbitExchange(@Nullable String exchange) {
        if (exchange == null || exchange.isEmpty() || exchange.length() > 255
                || exchange.chars().anyMatch(Character::isISOControl)) {
            throw new ConfigException("RabbitMQ exchange must be 1-255 characters without control characters, but was "
                    + (exchange == null ? "null" : Texts.quote(exchange)));
        }
        return exchange;
    }
}
