package io.txbox.spring;

import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Places an order: a business row and two outbox messages in one {@code @Transactional} method. */
@Service
public class OrderService {
    private final TxboxTemplate txbox;
    private final JdbcTemplate jdbc;

    public OrderService(TxboxTemplate txbox, JdbcTemplate jdbc) {
        this.txbox = txbox;
        this.jdbc = jdbc;
    }

    @Transactional
    public void place(String orderId, boolean fail) {
        jdbc.update("INSERT INTO orders (order_id) VALUES (?)", orderId);
        txbox.send(OutboxMessage.builder(StepKey.of(orderId, "charge"), "payments").routingKey(orderId)
                .payload("charge " + orderId).build());
        txbox.send(OutboxMessage.builder(StepKey.of(orderId, "ship"), "shipping").routingKey(orderId)
                .payload("ship " + orderId).build());
        if (fail) {
            throw new IllegalStateException("order " + orderId + " refused after the sends");
        }
    }
}
