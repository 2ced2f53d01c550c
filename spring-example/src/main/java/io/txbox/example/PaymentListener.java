package io.txbox.example;

import io.txbox.spring.TxboxListeners;
import java.nio.charset.StandardCharsets;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.messaging.Message;
import org.springframework.stereotype.Component;

/** Charges each order once: the payment row and the inbox entry commit together, then the offset. */
@Component
public class PaymentListener {
    private final TxboxListeners listeners;
    private final JdbcTemplate jdbc;

    public PaymentListener(TxboxListeners listeners, JdbcTemplate jdbc) {
        this.listeners = listeners;
        this.jdbc = jdbc;
    }

    @KafkaListener(topics = "${example.payments-topic}")
    public void onCharge(Message<byte[]> message) {
        listeners.process(message, (tx, m) -> {
            jdbc.update("INSERT INTO payments (step_key, amount) VALUES (?, ?)", m.key(),
                    new String(m.payload(), StandardCharsets.UTF_8));
            return null;
        });
    }
}
