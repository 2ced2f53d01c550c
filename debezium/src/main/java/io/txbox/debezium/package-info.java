/**
 * Change data capture for the txbox outbox: {@link io.txbox.debezium.TxboxOutboxRouter}, a single
 * message transform for Kafka Connect and Debezium Server that publishes the rows {@code
 * Outbox.send} writes in change-data-capture mode exactly as txbox's polling relay would (topic,
 * key, payload and headers, byte for byte). The module depends only on Kafka Connect's API, which
 * the worker provides. See {@code docs/DEBEZIUM.md} for the connector configurations.
 */
package io.txbox.debezium;
