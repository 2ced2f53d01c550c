package io.txbox.saga;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Restarts, in turn, one relay or the consumers of one service while orders are flowing: what a
 * rolling deployment or a crashed pod does. Unacked deliveries come again and rows a relay was
 * publishing may be published again; the inboxes absorb both.
 */
final class ChaosMonkey implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ChaosMonkey.class);

    private final List<SagaService> services;
    private final ScheduledExecutorService timer;
    private final AtomicInteger step = new AtomicInteger();
    private final AtomicInteger relayRestarts = new AtomicInteger();
    private final AtomicInteger consumerRestarts = new AtomicInteger();

    ChaosMonkey(List<SagaService> services, Duration every) {
        this.services = services;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "saga-chaos");
            t.setDaemon(true);
            return t;
        });
        if (!every.isZero()) {
            long ms = every.toMillis();
            timer.scheduleWithFixedDelay(this::strike, ms / 2, ms, TimeUnit.MILLISECONDS);
        }
    }

    private void strike() {
        int n = step.getAndIncrement();
        // relays and consumers take turns, so even a short run sees both restarted
        SagaService victim = services.get((n / 2) % services.size());
        try {
            if (n % 2 == 0) {
                victim.restartConsumers();
                consumerRestarts.incrementAndGet();
            } else {
                victim.restartRelay();
                relayRestarts.incrementAndGet();
            }
        } catch (RuntimeException e) {
            log.warn("chaos: restarting {} failed: {}", victim.name(), e.toString());
        }
    }

    int relayRestarts() {
        return relayRestarts.get();
    }

    int consumerRestarts() {
        return consumerRestarts.get();
    }

    /** Stops striking and waits for a restart in progress to finish. Idempotent. */
    @Override
    public void close() {
        if (timer.isShutdown()) {
            return;
        }
        timer.shutdown();
        try {
            timer.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
