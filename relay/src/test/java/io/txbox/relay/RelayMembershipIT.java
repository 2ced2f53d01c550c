package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.txbox.outbox.Lanes;
import io.txbox.testkit.TestMariaDb;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * Relays that start together on MariaDB: their workers renew their membership and drop expired
 * members at the same moments, and none of that upkeep is reported or logged as an error.
 */
class RelayMembershipIT {
    private static final int RELAYS = 5;
    private static final int WORKERS = 2;

    @RegisterExtension
    static final TestMariaDb DB = TestMariaDb.perClass(RELAYS * WORKERS + 8);

    /** Confirms every record at once. */
    static final class Confirming implements Publisher {
        final AtomicInteger published = new AtomicInteger();

        @Override
        public String broker() {
            return "confirming";
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            published.incrementAndGet();
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void close() {}
    }

    @Test
    void start_severalRelaysAtOnce_membershipUpkeepReportsAndLogsNoError() throws Exception {
        Db db = new Db(DB);
        Logger relayLogs = (Logger) LoggerFactory.getLogger("io.txbox.relay");
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        logs.start();
        relayLogs.addAppender(logs);
        ExecutorService starter = Executors.newFixedThreadPool(RELAYS);
        List<String> errors = new ArrayList<>();
        try (Confirming publisher = new Confirming()) {
            for (int round = 0; round < 3; round++) {
                List<Relay> relays = new ArrayList<>();
                for (int r = 0; r < RELAYS; r++) {
                    // a lease of 1 s makes every worker heartbeat several times a second
                    relays.add(Relay.builder().dataSource(db.ds).tables(db.tables).relayId("relay-" + round + "-" + r)
                            .workers(WORKERS).route("d", Route.of(publisher, "t")).laneLease(Duration.ofSeconds(1))
                            .publishTimeout(Duration.ofMillis(500))
                            .pollInterval(Duration.ofMillis(20)).backlogInterval(Duration.ZERO).build());
                }
                try {
                    CountDownLatch go = new CountDownLatch(1);
                    List<Future<?>> started = new ArrayList<>();
                    for (Relay relay : relays) {
                        started.add(starter.submit(() -> {
                            go.await();
                            relay.start();
                            return null;
                        }));
                    }
                    go.countDown();
                    for (Future<?> f : started) {
                        f.get(30, TimeUnit.SECONDS);
                    }
                    int sent = 200;
                    int before = publisher.published.get();
                    db.sendMany(sent, i -> Db.message("m" + i, "d", "rk-" + (i % 17), "x"));
                    await().atMost(Duration.ofSeconds(30)).until(() -> publisher.published.get() - before >= sent
                            && db.outboxRows() == 0);
                    await().atMost(Duration.ofSeconds(30)).until(() -> relays.stream()
                            .mapToInt(relay -> relay.status().ownedLanes()).sum() == Lanes.COUNT);
                    try {
                        // every worker heartbeats several times a second; keep watching for a while
                        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(3))
                                .until(() -> relays.stream().allMatch(relay -> relay.status().lastError() == null));
                    } catch (ConditionTimeoutException e) {
                        // an error appeared: the finally collects it for the assertion below
                    }
                } finally {
                    for (Relay relay : relays) {
                        String lastError = relay.status().lastError();
                        if (lastError != null) {
                            errors.add(relay.status().relayId() + ": " + lastError);
                        }
                        relay.close();
                    }
                }
            }
        } finally {
            starter.shutdownNow();
            relayLogs.detachAppender(logs);
        }
        assertThat(errors).as("lastError of relays that started together").isEmpty();
        assertThat(logs.list).filteredOn(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
                .extracting(ILoggingEvent::getFormattedMessage).as("warnings and errors of relays that started together")
                .isEmpty();
    }
}
