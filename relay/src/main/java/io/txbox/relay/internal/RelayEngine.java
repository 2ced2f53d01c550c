package io.txbox.relay.internal;

import io.txbox.internal.Args;
import io.txbox.internal.Dialect;
import io.txbox.internal.OptionalDependency;
import io.txbox.TxboxException;
import io.txbox.relay.DeadLetters;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayListener;
import io.txbox.relay.RelayStatus;
import io.txbox.relay.Route;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/** The {@link Relay} implementation: owns the workers, the counters and the publishers' lifecycle. */
final class RelayEngine implements Relay {
    private static final Logger log = LoggerFactory.getLogger(Relay.class);

    private final RelaySettings settings;
    /** Chosen by the DataSource's database when first needed (at start), then kept. */
    private volatile @Nullable RelayStore store;
    /** The DataSource's database, set with {@link #store}. */
    private volatile @Nullable Dialect dialect;
    private @Nullable WakeListener wakeListener;
    /** Whether the relay listens for other processes' sends; set in {@link #start()} before the workers run. */
    private volatile boolean listening;
    /** The parked keys' figures, for the backlog sample; set with {@link #store}. */
    private volatile @Nullable ParkedKeys parked;
    private final DestinationWaits waits;
    private final List<Worker> workers = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final List<AutoCloseable> wakeSubscriptions = new ArrayList<>();
    private final AtomicReference<RelayStatus.State> state = new AtomicReference<>(RelayStatus.State.NEW);
    private final AtomicLong published = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    /** Of {@link #failed}: rows retried after a counted attempt, and rows deferred while their target was missing. */
    private final AtomicLong failedAttempts = new AtomicLong();
    private final AtomicLong deferred = new AtomicLong();
    private final AtomicLong deadLettered = new AtomicLong();
    private volatile @Nullable String lastError;
    private volatile @Nullable Instant lastBatchAt;
    private @Nullable ScheduledExecutorService backlogSampler;
    private int backlogFailures;
    private volatile boolean tablesMissingLogged;

    RelayEngine(RelaySettings settings) {
        this.settings = settings;
        this.waits = new DestinationWaits(settings.relayId(), settings.backoff(), settings.ticker(), settings.random());
    }

    DestinationWaits waits() {
        return waits;
    }

    RelaySettings settings() {
        return settings;
    }

    RelayStore store() {
        RelayStore s = store;
        if (s == null) {
            synchronized (this) {
                s = store;
                if (s == null) {
                    Dialect d = Dialect.of(settings.dataSource());
                    parked = OperatorStore.of(settings.tables(), d).parkedKeys();
                    s = RelayStore.of(settings.tables(), d);
                    dialect = d;
                    store = s;
                }
            }
        }
        return s;
    }

    boolean running() {
        return state.get() == RelayStatus.State.RUNNING;
    }

    @Override
    public synchronized void start() {
        RelayStatus.State s = state.get();
        if (s == RelayStatus.State.RUNNING) {
            return;
        }
        if (s != RelayStatus.State.NEW) {
            throw new TxboxException("relay " + settings.relayId() + " is " + s + " and cannot be started again");
        }
        // which database this is decides the statements; a database that cannot be reached fails here
        store();
        listening = canListen();
        state.set(RelayStatus.State.RUNNING);
        for (int i = 0; i < settings.workers(); i++) {
            Worker w = new Worker(this, i);
            Thread t = new Thread(w, "txbox-" + w.memberId());
            t.setDaemon(true);
            workers.add(w);
            threads.add(t);
        }
        threads.forEach(Thread::start);
        if (!settings.backlogInterval().isZero()) {
            // its own thread and a connection borrowed per sample: a slow query never stalls a worker
            ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(() -> {
                    MDC.put(Relay.MDC_KEY, settings.relayId());
                    r.run();
                }, "txbox-" + settings.relayId() + "-backlog");
                t.setDaemon(true);
                return t;
            });
            long every = settings.backlogInterval().toMillis();
            sampler.scheduleWithFixedDelay(this::sampleBacklog, 0, every, TimeUnit.MILLISECONDS);
            backlogSampler = sampler;
        }
        settings.wakeOn().forEach(o -> wakeSubscriptions.add(o.onSend(this::wakeUp)));
        if (listening) {
            WakeListener l = new WakeListener(settings, this::wakeUp);
            wakeListener = l;
            l.start();
        }
        log.info("{} - started: {} workers, routes {}, batch {}, poll {}{}, publish timeout {}, lane lease {}",
                settings.relayId(), settings.workers(), settings.routes(), settings.batchSize(),
                settings.pollInterval(), listening ? " (woken by sends: LISTEN)" : "", settings.publishTimeout(),
                settings.laneLease());
    }

    /** Whether a {@link WakeListener} runs: where the option asks for it and the database has NOTIFY. */
    boolean listening() {
        return listening;
    }

    private boolean canListen() {
        Dialect d = dialect;
        if (!settings.listen() || d == null || !d.hasNotify()) {
            return false;
        }
        if (!OptionalDependency.present("org.postgresql.PGConnection")) {
            log.warn("{} - cannot listen for sends without the PostgreSQL JDBC driver (org.postgresql:postgresql) on the"
                    + " classpath; the workers poll every {}", settings.relayId(), settings.pollInterval());
            return false;
        }
        return true;
    }

    @Override
    public void wakeUp() {
        for (Worker w : workers) {
            w.wake();
        }
    }

    @Override
    public String id() {
        return settings.relayId();
    }

    @Override
    public RelayStatus status() {
        int lanes = 0;
        for (Worker w : workers) {
            lanes += w.ownedCount();
        }
        return new RelayStatus(settings.relayId(), state.get(), lanes, published.get(), failed.get(),
                deadLettered.get(), lastError, lastBatchAt, waits.reasons());
    }

    @Override
    public RelayStatus.Health health(Duration timeout) {
        Args.notNull(timeout, "timeout");
        String db;
        try (Connection c = settings.dataSource().getConnection()) {
            db = c.isValid((int) Math.max(1, timeout.toSeconds())) ? "UP" : "DOWN: connection not valid";
            if (db.equals("UP")) {
                String problem = SchemaCheck.problem(store(), c, settings.tables());
                if (problem != null) {
                    db = "DOWN: " + problem;
                }
            }
        } catch (Exception e) {
            db = "DOWN: " + e.getMessage();
        }
        Map<Publisher, String> checked = new IdentityHashMap<>();
        Map<String, String> brokers = new LinkedHashMap<>();
        settings.routes().forEach((destination, route) -> {
            String broker = checked.computeIfAbsent(route.publisher(), p -> {
                try {
                    p.check(timeout);
                    return "UP";
                } catch (RuntimeException e) {
                    return "DOWN: " + e.getMessage();
                }
            });
            brokers.put(destination, broker.equals("UP") ? targetHealth(destination, route, timeout) : broker);
        });
        boolean up = db.equals("UP") && brokers.values().stream().allMatch("UP"::equals);
        return new RelayStatus.Health(up, db, brokers);
    }

    /**
     * The target's own check; a target found again ends its destination's wait, so the waiting
     * rows go out with the next batch instead of after the pause.
     */
    private String targetHealth(String destination, Route route, Duration timeout) {
        try {
            route.publisher().checkTarget(route.target(), timeout);
        } catch (RuntimeException e) {
            return "DOWN: " + e.getMessage();
        }
        String waiting = waits.reason(destination);
        if (waiting != null) {
            waits.found(destination);
            wakeUp();
            return "DOWN: " + waiting;
        }
        return "UP";
    }

    @Override
    public void close() {
        synchronized (this) {
            RelayStatus.State s = state.get();
            if (s == RelayStatus.State.CLOSED || s == RelayStatus.State.CLOSING) {
                return;
            }
            state.set(RelayStatus.State.CLOSING);
        }
        for (AutoCloseable sub : wakeSubscriptions) {
            try {
                sub.close();
            } catch (Exception ignored) {
                // a listener registration cannot fail to close
            }
        }
        ScheduledExecutorService sampler = backlogSampler;
        if (sampler != null) {
            sampler.shutdownNow();
        }
        WakeListener listener = wakeListener;
        if (listener != null) {
            listener.stop(); // joined below, once the workers are done: its wait ends meanwhile
        }
        wakeUp();
        long deadline = System.nanoTime() + settings.shutdownTimeout().toNanos();
        for (Thread t : threads) {
            join(t, deadline);
        }
        for (int i = 0; i < threads.size(); i++) {
            Thread t = threads.get(i);
            if (t.isAlive()) {
                log.warn("{} - batch still running after the shutdown timeout {}; rolling it back (its rows stay in the outbox)",
                        workers.get(i).memberId(), settings.shutdownTimeout());
                workers.get(i).abort();
                // wakes a worker waiting for confirmations, so it gives up the batch and releases its lanes now
                t.interrupt();
            }
        }
        long grace = System.nanoTime() + 2_000_000_000L;
        for (Thread t : threads) {
            join(t, grace);
        }
        if (listener != null) {
            listener.join(2L * WakeListener.WAIT_MILLIS);
        }
        if (settings.closePublishers()) {
            Map<Publisher, Boolean> closed = new IdentityHashMap<>();
            for (Route r : settings.routes().values()) {
                if (closed.put(r.publisher(), Boolean.TRUE) == null) {
                    try {
                        r.publisher().close();
                    } catch (RuntimeException e) {
                        log.warn("{} - closing publisher {} failed: {}", settings.relayId(), r.publisher().broker(), e.toString());
                    }
                }
            }
        }
        state.set(RelayStatus.State.CLOSED);
        // rows held back or waiting for a missing target cost no attempt: the line says so apart
        long attempts = failedAttempts.get();
        long waited = deferred.get();
        log.info("{} - closed: {} published, {} failed attempts, {} held back behind a failed row, {} deferred while"
                + " their target was missing (no attempt counted), {} dead-lettered", settings.relayId(),
                published.get(), attempts, Math.max(0, failed.get() - attempts - waited), waited, deadLettered.get());
    }

    private static void join(Thread t, long deadlineNanos) {
        try {
            long left = deadlineNanos - System.nanoTime();
            if (left > 0) {
                t.join(Math.max(1, left / 1_000_000L));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Counts and reports a committed batch. */
    void batchDone(List<PublishRecord> rows, RowOutcome[] outcomes, long latencyNanos) {
        lastBatchAt = settings.clock().instant();
        // per destination: confirmed, retried, dead
        Map<String, int[]> counts = new HashMap<>();
        String lastDestination = null;
        int[] c = null;
        for (int i = 0; i < rows.size(); i++) {
            // a batch is mostly one destination: one map lookup per run of equal destinations
            if (!rows.get(i).destination().equals(lastDestination)) {
                lastDestination = rows.get(i).destination();
                c = counts.computeIfAbsent(lastDestination, d -> new int[3]);
            }
            switch (outcomes[i].kind()) {
                case CONFIRMED -> c[0]++;
                case RETRY -> {
                    if (BatchSettler.givesUp(rows.get(i), settings.maxAttempts())) {
                        c[2]++;
                    } else {
                        c[1]++;
                        failedAttempts.incrementAndGet();
                    }
                }
                case HELD -> c[1]++;
                case WAIT -> {
                    c[1]++;
                    deferred.incrementAndGet();
                }
                case PERMANENT, NO_ROUTE -> c[2]++;
            }
        }
        RelayListener listener = settings.listener();
        Duration latency = Duration.ofNanos(latencyNanos);
        counts.forEach((destination, n) -> {
            Route route = settings.routes().get(destination);
            String broker = route == null ? "none" : route.publisher().broker();
            published.addAndGet(n[0]);
            failed.addAndGet(n[1]);
            deadLettered.addAndGet(n[2]);
            try {
                if (n[0] > 0) {
                    listener.published(destination, broker, n[0], latency);
                }
                if (n[1] > 0) {
                    listener.failed(destination, broker, n[1]);
                }
                if (n[2] > 0) {
                    listener.deadLettered(destination, broker, n[2]);
                }
            } catch (RuntimeException e) {
                log.warn("{} - relay listener failed: {}", settings.relayId(), e.toString());
            }
        });
        for (RowOutcome o : outcomes) {
            if (o.kind() != RowOutcome.Kind.CONFIRMED && o.error() != null) {
                lastError = o.error();
                break;
            }
        }
    }

    private void sampleBacklog() {
        if (!running()) {
            return;
        }
        long[] b;
        DeadLetters.Parked p;
        try (Connection c = settings.dataSource().getConnection()) {
            b = store().backlog(c, (int) Math.max(1, Math.min(settings.backlogInterval().toSeconds(), 30)));
            p = java.util.Objects.requireNonNull(parked, "set with the store").summary(c);
            if (!c.getAutoCommit()) {
                c.commit();
            }
            backlogFailures = 0;
        } catch (Exception e) {
            if (store().isUndefinedTable(e)) {
                tablesMissing();
                return;
            }
            if (backlogFailures++ % 20 == 0) {
                log.warn("{} - backlog sample failed: {}", settings.relayId(), e.toString());
            }
            return;
        }
        try {
            settings.listener().backlog(b[0], Duration.ofMillis(b[1]));
            settings.listener().parkedKeys(p.keys(), p.oldestAge() == null ? Duration.ZERO : p.oldestAge());
        } catch (RuntimeException e) {
            log.warn("{} - relay listener failed: {}", settings.relayId(), e.toString());
        }
    }

    void error(Exception e) {
        lastError = e.getMessage();
    }

    /**
     * A worker found no txbox tables: says what to do once per episode, without a stack trace,
     * however many workers and polls run into it.
     */
    void tablesMissing() {
        String message = SchemaCheck.message(settings.tables());
        lastError = message;
        if (!tablesMissingLogged) {
            tablesMissingLogged = true;
            log.error("{} - {}; the workers keep retrying until the tables exist", settings.relayId(), message);
        }
    }

    /** A batch ran, so the tables exist again: a later loss is reported anew. */
    void tablesPresent() {
        if (tablesMissingLogged) {
            tablesMissingLogged = false;
        }
    }
}
