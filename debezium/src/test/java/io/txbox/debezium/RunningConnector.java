package io.txbox.debezium;

/**
 * A Debezium connector with {@link TxboxOutboxRouter} that streams one test database's outbox to
 * Kafka: {@link EmbeddedConnector} in the test JVM, or {@link ConnectorProcess} in a JVM of its own.
 */
interface RunningConnector extends AutoCloseable {
    /** Makes the next batch fail once {@code n} records in all were published, before their offsets are committed. */
    void crashAt(int n);

    /** Whether the engine stopped on its own (the crash, or an error). */
    boolean stopped();

    /** Records published so far; only final once the connector stopped or was closed. */
    int published();

    /** Stops the engine; its offsets stay, so a connector of the same name resumes. Idempotent. */
    @Override
    void close();
}
