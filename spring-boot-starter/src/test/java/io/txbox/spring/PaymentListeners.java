package io.txbox.spring;

import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Outcome;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.messaging.Message;

/**
 * A service's listeners, made exactly-once by {@link TxboxListeners}; {@link ListenersIT}
 * registers it (it has no stereotype, so no other test application scans it). The rest records
 * what happened, for the test.
 */
public class PaymentListeners {
    private final TxboxListeners txbox;
    private final JdbcTemplate jdbc;
    final List<String> failFirst = new CopyOnWriteArrayList<>();
    final Map<String, List<Outcome.Status>> outcomes = new ConcurrentHashMap<>();
    final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    final AtomicInteger keyless = new AtomicInteger();

    public PaymentListeners(TxboxListeners txbox, JdbcTemplate jdbc) {
        this.txbox = txbox;
        this.jdbc = jdbc;
        jdbc.execute("CREATE TABLE IF NOT EXISTS effects (k text NOT NULL)");
    }

    @KafkaListener(topics = "${test.topic}", groupId = "${test.topic}")
    public void onPayment(Message<byte[]> message) {
        Outcome outcome = txbox.process(message, (tx, m) -> charge(m));   // acked after the commit
        recorded(message, outcome);
    }

    @RabbitListener(queues = "${test.queue}")
    public void onShipment(Message<byte[]> message) {
        if (message.getHeaders().get("idempotency-key") == null) {
            keyless.incrementAndGet();
        }
        Outcome outcome = txbox.process(message, (tx, m) -> ship(m));
        recorded(message, outcome);
    }

    private byte[] charge(InboundMessage m) {
        return effect(m);
    }

    private byte[] ship(InboundMessage m) {
        return effect(m);
    }

    /** The business write, in the inbox's transaction; the first attempt of a key in failFirst throws after it. */
    private byte[] effect(InboundMessage m) {
        calls.computeIfAbsent(m.key(), k -> new AtomicInteger()).incrementAndGet();
        jdbc.update("INSERT INTO effects (k) VALUES (?)", m.key());
        if (failFirst.remove(m.key())) {
            throw new IllegalStateException("the first attempt of " + m.key() + " fails");
        }
        return null;
    }

    private void recorded(Message<byte[]> message, Outcome outcome) {
        Object k = message.getHeaders().get("idempotency-key");
        String key = k instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(k);
        outcomes.computeIfAbsent(key, x -> new CopyOnWriteArrayList<>()).add(outcome.status());
    }

    List<Outcome.Status> outcomes(String key) {
        return outcomes.getOrDefault(key, List.of());
    }

    int calls(String key) {
        return calls.getOrDefault(key, new AtomicInteger()).get();
    }
}
