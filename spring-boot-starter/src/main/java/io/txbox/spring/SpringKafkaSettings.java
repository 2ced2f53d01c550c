package io.txbox.spring;

import java.util.Map;

/**
 * The connection part of the application's Spring Kafka producer configuration ({@code
 * spring.kafka.*}): bootstrap servers, security protocol, SSL and SASL settings, as the embedded
 * relay's defaults.
 *
 * @param properties Kafka producer properties, as strings
 */
record SpringKafkaSettings(Map<String, String> properties) {
    SpringKafkaSettings {
        properties = Map.copyOf(properties);
    }

    /** Whether the relay takes {@code key} from Spring's producer configuration: connection settings only. */
    static boolean isConnectionSetting(String key) {
        return key.equals("bootstrap.servers") || key.equals("security.protocol") || key.equals("client.dns.lookup")
                || key.startsWith("ssl.") || key.startsWith("sasl.");
    }
}
