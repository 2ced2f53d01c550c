package io.txbox.spring;

import io.txbox.relay.Relay;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code txboxRelay} in Spring Boot 3's health endpoint, imported by name from {@link
 * TxboxRelayAutoConfiguration}.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = TxboxRelayAutoConfiguration.BOOT3_HEALTH)
@ConditionalOnMissingClass(TxboxRelayAutoConfiguration.BOOT_HEALTH)
class Boot3RelayHealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "txboxRelayHealthIndicator")
    Boot3RelayHealthIndicator txboxRelayHealthIndicator(Relay relay, RelayListeners listeners,
            TxboxProperties properties) {
        return new Boot3RelayHealthIndicator(new RelayHealth(relay, listeners, properties.getRelay().getHealthTimeout()));
    }
}
