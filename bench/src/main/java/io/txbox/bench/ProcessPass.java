package io.txbox.bench;

import io.txbox.inbox.Inbox;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import javax.sql.DataSource;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * {@code e2e-latency --relay process}: the same send schedule and receivers as the in-process
 * pass, but the relay is the standalone jar in a JVM of its own with its defaults, woken only
 * through the database (the senders' NOTIFY, {@code txbox.relay.listen}): latency from the send
 * commit to the receiving inbox commit, as a service with the relay beside it sees it. Keys {@code p<i>:e2e}, on a topic of its own.
 */
final class ProcessPass {
    /** What the pass measured; {@code lost} and {@code doubled} from the business table. */
    record Result(Histogram latency, double readyMs, long lost, long doubled, long sendErrors) {}

    private ProcessPass() {}

    static Result run(E2eLatency e2e, BenchEnv env, DataSource sendDs, DataSource recvDs, Inbox inbox, byte[] payload,
            int total, int firstMeasured, int consumers, int consumerBatch) throws Exception {
        Outbox outbox = Outbox.builder().tables(env.tables).build();
        Recorder latency = new Recorder(3);
        AtomicLong measured = new AtomicLong();
        AtomicLong sendErrors = new AtomicLong();
        AtomicLongArray maxPerSecond = new AtomicLongArray(total + 120);
        E2eLatency.Meeting meet = new E2eLatency.Meeting();
        long start = System.nanoTime();
        long[] before = E2eLatency.businessRows(env);
        try (Destination dest = Destination.create(Broker.KAFKA, env, "e2e-process", Map.of());
                StandaloneProcess relay = StandaloneProcess.start(env, List.of(), Map.of(dest.name, "kafka:" + dest.name),
                        Map.of())) {
            double readyMs = relay.awaitReady(Duration.ofSeconds(60));
            Scenario.log("relay process ready after %.0f ms; sending", readyMs);
            InboxConsumer.OnCommit onCommit = (key, first, nanos) -> {
                long sent = first ? meet.arrive(key, false, nanos) : 0;
                if (sent != 0) {
                    E2eLatency.record(key, nanos - sent, firstMeasured, latency, measured, maxPerSecond, start);
                }
            };
            try (Receivers receivers = Receivers.library(env.kafkaBootstrap(), dest.name, consumers, consumerBatch, recvDs,
                    inbox, onCommit)) {
                e2e.paced(total, i -> {
                    OutboxMessage m = OutboxMessage.builder(StepKey.of("p" + i, "e2e"), dest.name)
                            .routingKey("p" + i).payload(payload).build();
                    try (Connection c = sendDs.getConnection()) {
                        outbox.send(c, m);
                        c.commit();
                    } catch (SQLException | RuntimeException ex) {
                        sendErrors.incrementAndGet();
                        return;
                    }
                    long committed = System.nanoTime();
                    long recv = meet.arrive(m.stepKey().value(), true, committed);
                    if (recv != 0) {
                        E2eLatency.record(m.stepKey().value(), recv - committed, firstMeasured, latency, measured,
                                maxPerSecond, start);
                    }
                });
                long expected = total - sendErrors.get();
                long waitEnd = System.nanoTime() + 30_000_000_000L;
                long[] now = E2eLatency.businessRows(env);
                while (now[1] - before[1] < expected && System.nanoTime() < waitEnd) {
                    Thread.sleep(100);
                    now = E2eLatency.businessRows(env);
                }
                long distinct = now[1] - before[1];
                return new Result(latency.getIntervalHistogram(), readyMs, expected - distinct,
                        (now[0] - before[0]) - distinct, sendErrors.get());
            }
        }
    }
}
