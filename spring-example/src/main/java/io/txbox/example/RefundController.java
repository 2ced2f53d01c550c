package io.txbox.example;

import java.net.URI;
import java.util.UUID;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /refunds} with an {@code Idempotency-Key} header: the starter's filter
 * ({@code txbox.http.idempotency.enabled=true}) runs it once per key, in one transaction with
 * the stored response; a retry gets the same refund back.
 */
@RestController
public class RefundController {
    private final JdbcTemplate jdbc;

    public RefundController(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @PostMapping("/refunds")
    public ResponseEntity<String> refund(@RequestBody String orderId) {
        String refundId = UUID.randomUUID().toString();
        jdbc.update("INSERT INTO refunds (refund_id, order_id) VALUES (?, ?)", refundId, orderId);
        return ResponseEntity.created(URI.create("/refunds/" + refundId))
                .header("Content-Type", "application/json")
                .body("{\"refundId\":\"" + refundId + "\"}");
    }
}
