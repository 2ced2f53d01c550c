package io.txbox.spring;

import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.Texts;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Outcome;
import io.txbox.internal.Args;
import io.txbox.internal.KeyRules;
import io.txbox.outbox.OutboxMessage;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.messaging.Message;
import org.springframework.util.ClassUtils;

/**
 * Makes a Spring Kafka {@code @KafkaListener} or Spring AMQP {@code @RabbitListener} method
 * exactly-once in effect, with one line:
 *
 * <pre>{@code
 * @KafkaListener(topics = "payments")          // or @RabbitListener(queues = "payments")
 * void onPayment(Message<byte[]> message) {
 *     listeners.process(message, (tx, m) -> charge(m));
 * }
 * }</pre>
 *
 * <p>{@link #process} reads the idempotency key from the {@value OutboxMessage#IDEMPOTENCY_KEY_HEADER}
 * header (which the relay sets on every message), and runs {@link TxboxTemplate#process}: inbox
 * entry, handler and stored result in one Spring transaction, committed before {@code process}
 * returns. The container acks (RabbitMQ, acknowledge mode AUTO) or commits the offset (Kafka)
 * only after the listener method returned, so only after that commit. Then, by outcome:
 *
 * <ul>
 *   <li>PROCESSED, DUPLICATE: returns; the container acks. A redelivery of a processed message is
 *       DUPLICATE and its handler does not run.
 *   <li>FAILED (the handler threw; the attempt is counted and the writes rolled back), IN_FLIGHT:
 *       throws {@link RetryableException}, so the container redelivers (Kafka: its error handler
 *       seeks back; RabbitMQ: the message is requeued).
 *   <li>DEAD (failed {@code txbox.inbox.max-attempts} times): returns, and the container acks;
 *       the inbox keeps the DEAD entry with its reason ({@code Inbox.listDead}), and every later
 *       delivery of the key is DEAD too, until an operator resets it.
 *   <li>KEY_REUSED (same key, another payload), a missing or malformed key, a payload over
 *       {@code txbox.inbox.max-payload-bytes}: throws {@link InvalidInputException}, which the
 *       container's error handling takes: Kafka's default error handler retries it and then logs
 *       and skips it (or publishes it to a dead-letter topic if you configured a {@code
 *       DeadLetterPublishingRecoverer}); for RabbitMQ it is wrapped in Spring AMQP's {@code
 *       AmqpRejectAndDontRequeueException}, so the message is rejected without requeue (to the
 *       queue's dead-letter exchange, if it has one), never redelivered in a loop.
 * </ul>
 *
 * <p>The payload may be {@code byte[]} or {@code String} (UTF-8). Headers with text or byte
 * values reach the handler in {@link InboundMessage#headers()}.
 */
public final class TxboxListeners {
    static final String AMQP_REJECT = "org.springframework.amqp.AmqpRejectAndDontRequeueException";
    /** Spring AMQP's header for the broker's redelivered flag. */
    static final String AMQP_REDELIVERED = "amqp_redelivered";
    /** Spring AMQP's header for the delivery tag: present on every message a Rabbit listener receives. */
    static final String AMQP_DELIVERY_TAG = "amqp_deliveryTag";

    private static final Logger log = LoggerFactory.getLogger(TxboxListeners.class);

    private final TxboxTemplate txbox;

    TxboxListeners(TxboxTemplate txbox) {
        this.txbox = txbox;
    }

    /**
     * Processes one delivered message through the inbox, as described above.
     *
     * @return the outcome: PROCESSED, DUPLICATE or DEAD
     * @throws RetryableException when the message must be redelivered (FAILED, IN_FLIGHT)
     * @throws InvalidInputException when it can never be processed (a missing or malformed key,
     *     KEY_REUSED, an oversized payload); wrapped for RabbitMQ as described above
     */
    public Outcome process(Message<?> message, Handler handler) {
        Args.notNull(message, "message");
        Args.notNull(handler, "handler");
        boolean amqp = message.getHeaders().containsKey(AMQP_DELIVERY_TAG);
        try {
            InboundMessage inbound = toInbound(message);
            Outcome outcome = txbox.process(inbound, handler);
            return switch (outcome.status()) {
                case PROCESSED, DUPLICATE -> outcome;
                case DEAD -> {
                    log.error("{} - key {}: dead after {} attempts, acked; the inbox keeps it with the reason: {}",
                            txbox.getInbox().consumer(), Texts.quote(inbound.key()), outcome.attempts(), outcome.reason());
                    yield outcome;
                }
                case FAILED, IN_FLIGHT -> throw new RetryableException("[" + txbox.getInbox().consumer() + "] key "
                        + Texts.quote(inbound.key()) + " " + outcome.status() + ", to be redelivered: " + outcome.reason(), null);
                default -> throw new InvalidInputException("[" + txbox.getInbox().consumer() + "] key "
                        + Texts.quote(inbound.key()) + " " + outcome.status() + ": " + outcome.reason());
            };
        } catch (InvalidInputException e) {
            throw amqp ? Rabbit.reject(e) : e;
        }
    }

    /** The inbox message for a listener's message: key from the header, payload, text headers, the redelivered flag. */
    static InboundMessage toInbound(Message<?> message) {
        String header = OutboxMessage.IDEMPOTENCY_KEY_HEADER;
        String what = "idempotency key header " + Texts.quote(header);
        Object rawKey = message.getHeaders().get(header);
        String key;
        if (rawKey instanceof byte[] bytes) {
            key = KeyRules.decode(what, bytes);
        } else if (rawKey instanceof String text) {
            key = KeyRules.check(what, text);
        } else {
            throw new InvalidInputException(what + " is " + (rawKey == null ? "missing" : "not text but a "
                    + rawKey.getClass().getName()) + "; txbox's relay sets it on every message it publishes");
        }
        Map<String, String> headers = new LinkedHashMap<>();
        message.getHeaders().forEach((name, value) -> {
            if (value instanceof String s) {
                headers.put(name, s);
            } else if (value instanceof byte[] b) {
                headers.put(name, new String(b, StandardCharsets.UTF_8));
            }
        });
        boolean redelivered = Boolean.TRUE.equals(message.getHeaders().get(AMQP_REDELIVERED));
        return InboundMessage.builder(key, payload(message.getPayload())).headers(headers).redelivered(redelivered)
                .build();
    }

    private static byte[] payload(Object payload) {
        if (payload instanceof byte[] bytes) {
            return bytes;
        }
        if (payload instanceof String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        }
        throw new InvalidInputException("the listener's payload must be byte[] or String, but was a "
                + payload.getClass().getName() + ": declare the parameter as Message<byte[]>");
    }

    @Override
    public String toString() {
        return "TxboxListeners[" + txbox.getInbox().consumer() + "]";
    }

    /** Spring AMQP's reject-without-requeue, only touched for a message a Rabbit listener received. */
    static final class Rabbit {
        private Rabbit() {}

        static RuntimeException reject(InvalidInputException e) {
            if (!ClassUtils.isPresent(AMQP_REJECT, TxboxListeners.class.getClassLoader())) {
                return e;
            }
            return new org.springframework.amqp.AmqpRejectAndDontRequeueException(e.getMessage(), e);
        }
    }
}
