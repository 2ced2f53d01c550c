package io.txbox.example;

import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.spring.TxboxTemplate;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** {@code PUT /orders/{id}}: the order row and its "charge" message commit together, or neither does. */
@RestController
public class OrderController {
    private final TxboxTemplate txbox;
    private final JdbcTemplate jdbc;

    public OrderController(TxboxTemplate txbox, JdbcTemplate jdbc) {
        this.txbox = txbox;
        this.jdbc = jdbc;
    }

    @PutMapping("/orders/{id}")
    @Transactional
    public ResponseEntity<String> place(@PathVariable String id, @RequestBody String amount) {
        int inserted = jdbc.update("INSERT INTO orders (order_id, amount) VALUES (?, ?) ON CONFLICT DO NOTHING",
                id, amount);
        if (inserted == 1) {                                         // a repeated PUT sends nothing new
            txbox.send(OutboxMessage.builder(StepKey.of(id, "charge"), "payments")
                    .routingKey(id).payload(amount).build());
        }
        return ResponseEntity.accepted().body(inserted == 1 ? "placed" : "already placed");
    }
}
