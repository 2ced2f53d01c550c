package io.txbox.outbox;

import io.txbox.ConfigException;
import io.txbox.internal.Args;
import io.txbox.TxboxTables;
import java.sql.Connection;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

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
    /**
     * Default cap on a message's size as Kafka counts its record ({@link OutboxMessage#recordBytes()}):
     * {@value} bytes, 1 KiB under 1 MiB. The producer refuses a record whose count is over its
     * {@code max.request.size} (default 1 MiB); the broker then refuses a record batch larger
     * than its {@code message.max.bytes} (default 1 MiB + 12 bytes) after compression, and
     * compression adds framing to a payload it cannot shrink (under 100 bytes per MiB for the
     * relay's default lz4, and for gzip and zstd). The 1 KiB margin covers both, so a message
     * {@link #send} accepts is published by a relay and broker that keep these defaults. snappy
     * can grow an incompressible payload by up to a sixth: with it, lower the cap.
     */
    int DEFAULT_MAX_RECORD_BYTES = 1024 * 1024 - 1024;

    /**
     * Least time between two wake-ups one outbox sends to the relays on PostgreSQL ({@link
     * Builder#notifyRelays(boolean)}): 10 ms.
     */
    Duration NOTIFY_SPACING = Duration.ofMillis(10);

    static Builder builder() {
        return new Builder();
    }

    /**
     * Inserts {@code message} on {@code tx} without committing. A second send of the same step
     * key while the first row is still in the outbox (not yet published, or dead-lettered) is a
     * no-op ({@code ON CONFLICT (step_key) DO NOTHING}) and returns false, not an error. Once
     * the relay has published the first row it deletes it, and a later send of the same step
     * key writes a new row and is published again: the outbox does not remember published
     * steps. The receiving inbox, keyed by the step key, absorbs that second delivery as a
     * duplicate within its retention window. One statement, one round trip.
     *
     * <p>With the OpenTelemetry API on the classpath and a valid span current on the calling
     * thread, a message without a {@link OutboxMessage#traceparent() traceparent} of its own is
     * stored with that span's W3C {@code traceparent} (and {@code tracestate}, unless longer
     * than 512 chars), which the relay publishes as headers. Without the API nothing is added.
     *
     * <p><b>Change data capture.</b> To a destination in CDC mode ({@link
     * Builder#changeDataCapture()}), {@code send} inserts the row marked {@code captured} and
     * deletes it again in the same transaction (two statements): the table never grows, no relay
     * ever sees the row, and a connector reading the write-ahead log or binlog (Debezium with
     * {@code io.txbox.debezium.TxboxOutboxRouter}) publishes the insert once the transaction
     * commits. The step key's duplicate check then covers only rows still waiting for a relay (sent
     * before the switch to CDC): it returns false, and writes nothing, while such a row holds the
     * step key. Every other CDC send returns true and is published, even a second send of the same
     * step key in the same transaction; the receiving inbox, keyed by the step key, absorbs it.
     *
     * @return true if this call wrote the row, false if the step key was already there
     * @throws io.txbox.InvalidInputException if the message is over the cap
     *     ({@link OutboxMessage#recordBytes()} above {@code maxRecordBytes}); nothing is written
     * @throws IllegalStateException if {@code tx} is in auto-commit mode (the row would commit on
     *     its own, whatever happens to the business writes); nothing is written
     * @throws io.txbox.RetryableException on a serialization failure, timeout or lost connection
     * @throws io.txbox.InvalidInputException if the message has a delay or due time and its
     *     destination is in CDC mode: the connector publishes at commit, so it cannot wait; nothing
     *     is written
     */
    boolean send(Connection tx, OutboxMessage message);

    /**
     * Sends several messages in one batched round trip; returns which were emitted, in order.
     * Each carries the current trace context as with {@link #send}.
     * Messages to destinations in CDC mode are written one by one, as {@link #send} writes them.
     *
     * @throws io.txbox.InvalidInputException if any message is over the cap, or delayed to a
     *     destination in CDC mode; nothing is written
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
     * @throws io.txbox.InvalidInputException if {@code listener} is null
     */
    AutoCloseable onSend(Runnable listener);

    /** Configures an {@link Outbox}; defaults are listed on each method. */
    final class Builder {
        TxboxTables tables = TxboxTables.defaults();
        int maxRecordBytes = DEFAULT_MAX_RECORD_BYTES;
        /** Destinations in CDC mode; {@code null} for every destination, empty for none. */
        Set<String> captured = Set.of();
        boolean notifyRelays = true;

        Builder() {}

        /**
         * Whether a send wakes the relays that listen for this outbox's rows (a relay process, or
         * one in another service) at once, rather than at their next poll; default true. On
         * PostgreSQL a send that wrote a row for a relay also runs {@code SELECT pg_notify(..)},
         * delivered when the transaction commits, at most once per {@link Outbox#NOTIFY_SPACING} per
         * outbox, because PostgreSQL serializes the commits of notifying transactions. Rows for a
         * destination in CDC mode never notify. On MariaDB and MySQL, which have no NOTIFY, it does
         * nothing. A relay in the same process is woken by {@link Outbox#onSend} in any case.
         */
        public Builder notifyRelays(boolean notifyRelays) {
            this.notifyRelays = notifyRelays;
            return this;
        }

        /**
         * Puts every destination in change-data-capture mode: each send inserts its row and deletes
         * it in the same transaction, and a log-reading connector publishes it (see {@link
         * Outbox#send}). Default: no destination; a relay publishes every row. Needs the txbox
         * tables at migration version 6 or later (the {@code captured} column).
         */
        public Builder changeDataCapture() {
            this.captured = null;
            return this;
        }

        /**
         * Puts only {@code destinations} in change-data-capture mode (see {@link
         * #changeDataCapture()}); a relay keeps publishing the others. Replaces an earlier call.
         *
         * @throws ConfigException if {@code destinations} is empty or holds a null or blank name
         */
        public Builder changeDataCapture(Collection<String> destinations) {
            Args.configured(destinations, "changeDataCapture destinations");
            if (destinations.isEmpty()) {
                throw new ConfigException("changeDataCapture destinations must not be empty;"
                        + " call changeDataCapture() for every destination");
            }
            Set<String> names = new LinkedHashSet<>();
            for (String d : destinations) {
                if (d == null || d.isBlank()) {
                    throw new ConfigException("changeDataCapture destinations must be non-blank names, but held "
                            + (d == null ? "null" : "'" + d + "'"));
                }
                names.add(d);
            }
            this.captured = Set.copyOf(names);
            return this;
        }

        /** Where the tables live; default {@link TxboxTables#defaults()}. */
        public Builder tables(TxboxTables tables) {
            this.tables = Args.configured(tables, "tables");
            return this;
        }

        /**
         * Largest message send accepts, in bytes as Kafka counts its record
         * ({@link OutboxMessage#recordBytes()}: payload, routing key, every published header and
         * Kafka's record overhead); default {@value #DEFAULT_MAX_RECORD_BYTES}, which fits Kafka's
         * defaults (see {@link #DEFAULT_MAX_RECORD_BYTES}). Raise it only together with the
         * producer's {@code max.request.size} and the broker's {@code message.max.bytes} (or the
         * topic's {@code max.message.bytes}), keeping 1 KiB of margin for compression; a message
         * the producer or broker refuses is dead-lettered by the relay. At least 1.
         */
        public Builder maxRecordBytes(int maxRecordBytes) {
            if (maxRecordBytes < 1) {
                throw new ConfigException("maxRecordBytes must be at least 1, but was " + maxRecordBytes);
            }
            this.maxRecordBytes = maxRecordBytes;
            return this;
        }

        public Outbox build() {
            return new OutboxImpl(this);
        }
    }
}
