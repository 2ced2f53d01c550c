package io.txbox.outbox;

import io.txbox.ConfigException;
import io.txbox.TxboxTables;
import java.sql.Connection;
import java.util.List;

/**
 * Writes outgoing messages as rows in the caller's own transaction; the relay publishes them
 * after the transaction commits, so a message is sent if and only if the business writes
 * commit. Thread-safe; build one per set of tables and share it.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.builder().tables(TxboxTables.inSchema("orders")).build();
 * boolean emitted = outbox.send(tx, OutboxMessage.builder(StepKey.of(key, "process-payment"), "payments")
 *         .routingKey(orderId).payload(json).build());
 * }</pre>
 */
public interface Outbox {
    /** Default payload cap: 1 MiB, Kafka's default {@code max.request.size}. */
    int DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

    static Builder builder() {
        return new Builder();
    }

    /**
     * Inserts {@code message} on {@code tx} without committing. A second send of the same step
     * key is a no-op ({@code ON CONFLICT (step_key) DO NOTHING}), not an error. One statement,
     * one round trip.
     *
     * @return true if this call wrote the row, false if the step key was already there
     * @throws io.txbox.InvalidInputException if the payload is over the cap; nothing is written
     * @throws IllegalStateException if {@code tx} is in auto-commit mode (the row would commit on
     *     its own, whatever happens to the business writes); nothing is written
     * @throws io.txbox.RetryableException on a serialization failure, timeout or lost connection
     */
    boolean send(Connection tx, OutboxMessage message);

    /**
     * Sends several messages in one batched round trip; returns which were emitted, in order.
     *
     * @throws io.txbox.InvalidInputException if any payload is over the cap; nothing is written
     * @throws IllegalStateException if {@code tx} is in auto-commit mode; nothing is written
     */
    List<Boolean> sendAll(Connection tx, List<OutboxMessage> messages);

    /** Where this outbox writes. */
    TxboxTables tables();

    /**
     * Runs {@code listener} after every send, on the sending thread, before the caller commits.
     * An in-process relay uses it to look for new rows at once instead of waiting for its poll.
     *
     * @return closing it removes the listener
     */
    AutoCloseable onSend(Runnable listener);

    /** Configures an {@link Outbox}; defaults are listed on each method. */
    final class Builder {
        TxboxTables tables = TxboxTables.defaults();
        int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;

        Builder() {}

        /** Where the tables live; default {@link TxboxTables#defaults()}. */
        public Builder tables(TxboxTables tables) {
            if (tables == null) {
                throw new ConfigException("tables must not be null");
            }
            this.tables = tables;
            return this;
        }

        /** Largest payload accepted by send, in bytes; default {@value #DEFAULT_MAX_PAYLOAD_BYTES}. */
        public Builder maxPayloadBytes(int maxPayloadBytes) {
            if (maxPayloadBytes < 1) {
                throw new ConfigException("maxPayloadBytes must be at least 1, but was " + maxPayloadBytes);
            }
            this.maxPayloadBytes = maxPayloadBytes;
            return this;
        }

        public Outbox build() {
            return new OutboxImpl(this);
        }
    }
}
