package io.txbox.relay.standalone;

import java.util.Set;
import java.util.TreeSet;

/** The Kafka producer's property names, for checking {@code txbox.kafka.*} keys against typos. */
final class KafkaNames {
    private KafkaNames() {}

    /** Every producer property name; empty if kafka-clients is not on the classpath (nothing to check against). */
    static Set<String> producerConfigNames() {
        try {
            return new TreeSet<>(org.apache.kafka.clients.producer.ProducerConfig.configNames());
        } catch (NoClassDefFoundError e) {
            return Set.of();
        }
    }

    /** {@code "; did you mean linger.ms?"} for a near miss, else empty. */
    static String suggest(String name) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : producerConfigNames()) {
            int d = ConfigReader.distance(name, candidate);
            if (d < bestDistance) {
                bestDistance = d;
                best = candidate;
            }
        }
        return best != null && bestDistance <= 3 ? "; did you mean " + best + "?" : "";
    }
}
