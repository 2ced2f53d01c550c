package io.txbox.spring;

import io.txbox.ConfigException;
import io.txbox.internal.OptionalDependency;
import io.txbox.relay.Publisher;
import io.txbox.relay.Relay;
import io.txbox.relay.Route;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.spring.TxboxProperties.RelayProperties;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * Turns {@code txbox.relay.routes.<destination>=kafka:<topic>|rabbitmq:<exchange>} into relay
 * routes, with one publisher per broker, connected with the {@code txbox.relay.kafka.*} /
 * {@code txbox.relay.rabbitmq.*} settings or else those of the application's Spring Kafka /
 * Spring AMQP configuration. Each broker's classes are touched only in its nested class, so an
 * application with only one broker client never loads the other.
 */
final class RelayRoutes {
    static final String ROUTES = TxboxProperties.PREFIX + ".relay.routes";
    static final String KAFKA = "kafka";
    static final String RABBITMQ = "rabbitmq";

    private final RelayProperties properties;
    private final @Nullable SpringKafkaSettings springKafka;
    private final @Nullable SpringRabbitSettings springRabbit;
    private final List<Publisher> publishers = new ArrayList<>();
    private @Nullable Publisher kafka;
    private @Nullable Publisher rabbit;

    RelayRoutes(RelayProperties properties, @Nullable SpringKafkaSettings springKafka,
            @Nullable SpringRabbitSettings springRabbit) {
        this.properties = properties;
        this.springKafka = springKafka;
        this.springRabbit = springRabbit;
    }

    /**
     * Adds every configured route to {@code builder}. On a refused value, closes the publishers
     * it opened and throws {@link InvalidConfigurationPropertyValueException} naming the property.
     */
    void addTo(Relay.Builder builder) {
        Map<String, String> routes = properties.getRoutes();
        if (routes.isEmpty()) {
            throw new InvalidConfigurationPropertyValueException(ROUTES, "{}", "txbox.relay.enabled=true needs at"
                    + " least one route: set txbox.relay.routes.<destination>=kafka:<topic> or"
                    + " txbox.relay.routes.<destination>=rabbitmq:<exchange>");
        }
        try {
            routes.forEach((destination, value) -> builder.route(destination, route(destination, value)));
        } catch (RuntimeException e) {
            publishers.forEach(RelayRoutes::closeQuietly);
            throw e;
        }
    }

    private Route route(String destination, @Nullable String value) {
        String property = ROUTES + "." + destination;
        String v = value == null ? "" : value.trim();
        int colon = v.indexOf(':');
        String broker = colon < 0 ? "" : v.substring(0, colon).toLowerCase(Locale.ROOT);
        String target = colon < 0 ? "" : v.substring(colon + 1).trim();
        try {
            if (broker.equals(KAFKA)) {
                return Kafka.route(kafkaPublisher(), target);
            }
            if (broker.equals(RABBITMQ)) {
                return Rabbit.route(rabbitPublisher(), target);
            }
        } catch (ConfigException e) {
            throw new InvalidConfigurationPropertyValueException(property, value, e.getMessage());
        }
        throw new InvalidConfigurationPropertyValueException(property, value,
                "a route must be kafka:<topic> or rabbitmq:<exchange>");
    }

    private Publisher kafkaPublisher() {
        if (kafka == null) {
            kafka = Kafka.publisher(properties.getKafka(),
                    springKafka == null ? Map.of() : springKafka.properties());
            publishers.add(kafka);
        }
        return kafka;
    }

    private Publisher rabbitPublisher() {
        if (rabbit == null) {
            rabbit = Rabbit.publisher(properties.getRabbitmq(), springRabbit);
            publishers.add(rabbit);
        }
        return rabbit;
    }

    private static void closeQuietly(Publisher publisher) {
        try {
            publisher.close();
        } catch (Exception e) {
            // startup is failing already; the first error is the one to report
        }
    }

    /** The Kafka side: only loaded for a kafka: route. */
    static final class Kafka {
        private Kafka() {}

        static Publisher publisher(TxboxProperties.KafkaProperties own, Map<String, String> fromSpring) {
            OptionalDependency.require("org.apache.kafka.clients.producer.KafkaProducer",
                    "org.apache.kafka:kafka-clients", "the embedded relay's kafka: routes");
            Map<String, String> config = new LinkedHashMap<>(fromSpring);
            String prefix = TxboxProperties.PREFIX + ".relay.kafka.";
            KafkaPublisher.Builder builder = KafkaPublisher.builder();
            TxboxAutoConfiguration.check("relay.kafka.properties", own.getProperties(), () -> {
                config.putAll(own.getProperties());
                return builder.properties(config);
            });
            String servers = own.getBootstrapServers();
            if (servers != null) {
                TxboxAutoConfiguration.check("relay.kafka.bootstrap-servers", servers, () -> builder.bootstrapServers(servers));
            }
            try {
                return builder.build();
            } catch (ConfigException e) {
                throw new InvalidConfigurationPropertyValueException(prefix + "bootstrap-servers", servers, e.getMessage()
                        + "; set txbox.relay.kafka.bootstrap-servers, or spring.kafka.bootstrap-servers with spring-kafka"
                        + " on the class path");
            }
        }

        static Route route(Publisher publisher, String topic) {
            return ((KafkaPublisher) publisher).topic(topic);
        }
    }

    /** The RabbitMQ side: only loaded for a rabbitmq: route. */
    static final class Rabbit {
        private Rabbit() {}

        /** Opens the relay's RabbitMQ connection now; a broker that cannot be reached fails startup, saying why. */
        static Publisher publisher(TxboxProperties.RabbitProperties own, @Nullable SpringRabbitSettings fromSpring) {
            OptionalDependency.require("com.rabbitmq.client.ConnectionFactory", "com.rabbitmq:amqp-client",
                    "the embedded relay's rabbitmq: routes");
            RabbitPublisher.Builder builder = RabbitPublisher.builder();
            String uri = own.getUri();
            if (uri != null) {
                TxboxAutoConfiguration.check("relay.rabbitmq.uri", "(masked)", () -> builder.uri(uri));
            } else if (fromSpring != null) {
                builder.connectionFactory(fromSpring.factory());
            } else {
                throw new InvalidConfigurationPropertyValueException(TxboxProperties.PREFIX + ".relay.rabbitmq.uri", null,
                        "a rabbitmq: route needs a RabbitMQ connection: set txbox.relay.rabbitmq.uri, or add"
                        + " spring-boot-starter-amqp and its spring.rabbitmq.* settings");
            }
            return builder.build();
        }

        static Route route(Publisher publisher, String exchange) {
            return ((RabbitPublisher) publisher).exchange(exchange);
        }
    }
}
