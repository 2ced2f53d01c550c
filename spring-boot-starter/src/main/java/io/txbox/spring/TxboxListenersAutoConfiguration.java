package io.txbox.spring;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * {@link TxboxListeners}, the inbox for {@code @KafkaListener} and {@code @RabbitListener}
 * methods, when Spring Messaging (which Spring Kafka and Spring AMQP bring) is on the class path
 * and there is a {@link TxboxTemplate}.
 */
@AutoConfiguration(after = TxboxAutoConfiguration.class)
@ConditionalOnClass(name = "org.springframework.messaging.Message")
@ConditionalOnBean(TxboxTemplate.class)
public class TxboxListenersAutoConfiguration {
    @Bean
    @ConditionalOnMissingBean
    public TxboxListeners txboxListeners(TxboxTemplate txbox) {
        return new TxboxListeners(txbox);
    }
}
