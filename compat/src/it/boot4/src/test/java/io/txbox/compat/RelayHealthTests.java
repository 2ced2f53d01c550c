package io.txbox.compat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;

/**
 * The embedded relay, publishing to RabbitMQ through Spring AMQP's settings, is a component of
 * the actuator's health endpoint. The endpoint's types moved between Spring Boot 3 and 4, and
 * this test runs on both, so it calls the endpoint by name.
 */
@SpringBootTest(properties = {
    "txbox.relay.enabled=true",
    "txbox.relay.routes.payments=rabbitmq:amq.topic",
    "management.endpoint.health.show-details=always"})
class RelayHealthTests {
    private static final String[] HEALTH_ENDPOINTS = {
        "org.springframework.boot.health.actuate.endpoint.HealthEndpoint",   // Spring Boot 4
        "org.springframework.boot.actuate.health.HealthEndpoint"};           // Spring Boot 3

    @Autowired ApplicationContext context;

    @Test
    void healthEndpoint_showsTheRelayUpWithItsFigures() throws Exception {
        Object endpoint = context.getBean(healthEndpointType());
        Method forPath = endpoint.getClass().getMethod("healthForPath", String[].class);
        Object relay = await().atMost(Duration.ofSeconds(30))
                .until(() -> forPath.invoke(endpoint, (Object) new String[] {"txboxRelay"}),
                        health -> health != null && "UP".equals(status(health)));
        assertThat(relay).as("txboxRelay health component").isNotNull();
        assertThat(status(relay)).isEqualTo("UP");
        @SuppressWarnings("unchecked")
        Map<String, Object> details = (Map<String, Object>) relay.getClass().getMethod("getDetails").invoke(relay);
        assertThat(details).containsKeys("relayId", "state", "database", "brokers", "lanesHeld");
        assertThat(details.get("state")).isEqualTo("RUNNING");
    }

    private static String status(Object health) {
        try {
            Object status = health.getClass().getMethod("getStatus").invoke(health);
            return (String) status.getClass().getMethod("getCode").invoke(status);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Class<?> healthEndpointType() throws ClassNotFoundException {
        for (String name : HEALTH_ENDPOINTS) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException e) {
                // the other Spring Boot line
            }
        }
        throw new ClassNotFoundException(String.join(" or ", HEALTH_ENDPOINTS));
    }
}
