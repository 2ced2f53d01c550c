package io.txbox.relay.standalone;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.txbox.TxboxException;
import io.txbox.relay.Publisher;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayOption;
import io.txbox.relay.RelayStatus;
import io.txbox.relay.Route;
import io.txbox.relay.internal.SchemaCheck;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.micrometer.RelayMetrics;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.relay.standalone.RelayConfig.Broker;
import io.txbox.relay.standalone.RelayConfig.Destination;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The standalone relay process, assembled from a {@link RelayConfig}: a connection pool, one
 * publisher per broker in use, the {@link Relay}, a Prometheus registry and the HTTP endpoints.
 *
 * <p>{@link #start} builds and starts everything or, if any part fails, closes what it built
 * and throws. RabbitMQ being down is no such failure: the process starts, {@code /health/ready}
 * answers 503 naming {@code rabbitmq}, and the connection is tried again every
 * {@value #RECONNECT_SECONDS} seconds while the relay keeps the rows and backs off. {@link #close} stops in the order that loses nothing: HTTP turns to 503 first so
 * traffic drains, then the relay finishes its in-flight batches and releases its lanes, then the
 * HTTP server, the publishers and the pool close.
 */
public final class StandaloneRelay implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(StandaloneRelay.class);
    /** How often a broker that was unreachable at start is tried again. */
    static final int RECONNECT_SECONDS = 5;
    static final Duration RECONNECT_INTERVAL = Duration.ofSeconds(RECONNECT_SECONDS);

    private final RelayConfig config;
    private final Deque<AutoCloseable> closeables = new ArrayDeque<>();
    private final PrometheusMeterRegistry registry;
    private @Nullable Relay relay;
    private @Nullable HttpEndpoints http;
    private volatile boolean closed;

    private StandaloneRelay(RelayConfig config) {
        this.config = config;
        this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    }

    /**
     * Builds and starts the relay process described by {@code config}.
     *
     * @throws io.txbox.ConfigException if the config has no destination
     * @throws TxboxException if the database cannot be reached or the HTTP port is taken (an unreachable
     *     broker only makes the process not ready)
     */
    public static StandaloneRelay start(RelayConfig config) {
        config.requireDestinations();
        StandaloneRelay process = new StandaloneRelay(config);
        try {
            process.startParts();
            return process;
        } catch (RuntimeException | Error e) {
            process.close();
            throw e;
        }
    }

    /**
     * Runs the relay process until SIGTERM or SIGINT, then stops it gracefully ({@link #close})
     * and logs {@code stopped cleanly}. Signals are handled here rather than by the JVM's
     * shutdown hooks, so the process can exit with 0 after a clean stop instead of 143. If the
     * stop takes longer than the shutdown timeout plus 10 s, the process halts with status 1.
     *
     * @return true if it stopped cleanly
     * @throws TxboxException if it could not start
     */
    public static boolean runUntilStopped(RelayConfig config) {
        CountDownLatch stop = new CountDownLatch(1);
        AtomicReference<String> reason = new AtomicReference<>("shutdown");
        Signals.onTermination(name -> {
            reason.compareAndSet("shutdown", "SIG" + name);
            stop.countDown();
        });
        StandaloneRelay process = start(config);
        String id = process.relay().id();
        // A plain exit (System.exit elsewhere, SIGHUP, or signals we could not handle) still
        // stops gracefully: the hook triggers the stop and waits until main has finished it.
        CountDownLatch finished = new CountDownLatch(1);
        Duration bound = config.relay(RelayOption.SHUTDOWN_TIMEOUT).plusSeconds(10);
        Thread hook = new Thread(() -> {
            stop.countDown();
            try {
                finished.await(bound.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "txbox-shutdown-hook");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            stop.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            reason.set("interrupt");
        }
        log.info("{} - {} received, stopping (at most {})", id, reason.get(), Durations.format(config.relay(RelayOption.SHUTDOWN_TIMEOUT)));
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(bound.toMillis());
                log.error("{} - did not stop within {}; halting", id, Durations.format(bound));
                Runtime.getRuntime().halt(1);
            } catch (InterruptedException e) {
                // stopped in time
            }
        }, "txbox-shutdown-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        try {
            process.close();
            log.info("{} - stopped cleanly", id);
            return true;
        } catch (TxboxException e) {
            log.error("{} - stopped with errors: {}", id, Redaction.scrub(e.getMessage()));
            return false;
        } finally {
            watchdog.interrupt();
            finished.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // the JVM is already shutting down; the hook returns at once since finished is counted down
            }
        }
    }

    private void startParts() {
        HikariDataSource pool = Pools.open(config, "txbox-relay", config.poolSize(), registry);
        closeables.push(pool);
        Thread statements = renderStatements(pool);

        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);

        String relayId = config.relay(RelayOption.RELAY_ID);
        String processId = relayId != null ? relayId : "txbox-relay";
        Map<Broker, Publisher> publishers = new LinkedHashMap<>();
        if (config.uses(Broker.KAFKA)) {
            KafkaPublisher.Builder kafkaBuilder = KafkaPublisher.builder().properties(config.kafkaProperties());
            if (config.kafkaStrictFencing() != null) {
                kafkaBuilder.strictFencing(config.kafkaStrictFencing());
            }
            KafkaPublisher kafka = kafkaBuilder.build();
            publishers.put(Broker.KAFKA, kafka);
            closeables.push(kafka);
        }
        if (config.uses(Broker.RABBITMQ)) {
            // a bad URI fails the start; an unreachable broker only turns readiness to 503 until it answers
            RabbitPublisher.Builder rabbitBuilder = RabbitPublisher.builder().uri(String.valueOf(config.rabbitUri()))
                    .connectionName(processId);
            Publisher rabbit = new ConnectingPublisher(RabbitPublisher.BROKER, processId, rabbitBuilder::build,
                    RECONNECT_INTERVAL, System::nanoTime);
            publishers.put(Broker.RABBITMQ, rabbit);
            closeables.push(rabbit);
        }

        RelayMetrics meters = RelayMetrics.of(registry);
        Relay.Builder builder = config.applyTo(Relay.builder())
                .dataSource(pool)
                .tables(config.tables())
                .listener(meters)
                // the publishers are closed here, after the relay, in reverse order of opening
                .closePublishers(false);
        for (Destination d : config.destinations().values()) {
            Publisher p = publishers.get(d.broker());
            builder.route(d.name(), d.broker() == Broker.KAFKA
                    ? ((KafkaPublisher) p).topic(d.target()) : Route.of(p, d.target()));
            meters.destination(d.name(), p.broker());
        }
        Relay r = builder.build();
        relay = r;

        http = new HttpEndpoints(config.httpHost(), config.httpPort(), r.id(), this::readiness, registry::scrape);
        closeables.push(http);

        awaitQuietly(statements);
        r.start();
        log.info("{} - started: HTTP port {}, {} worker(s), batch size {}, destinations {}, database {}",
                r.id(), http.port(), config.relay(RelayOption.WORKERS), config.relay(RelayOption.BATCH_SIZE), config.destinations().values(),
                Redaction.url(config.jdbcUrl()));
    }

    /**
     * Renders the relay's statements for this database (jOOQ: the longest step of the start) on a
     * thread of its own, while the publishers, metrics and HTTP start on this one, so that {@link
     * Relay#start} finds jOOQ loaded. It looks at the tables the same way the relay does, and
     * only warms: the relay's own start and readiness still decide (a missing schema is reported
     * by readiness, as before), and a failure here is only logged at debug.
     */
    private Thread renderStatements(HikariDataSource pool) {
        Thread t = new Thread(() -> {
            try (Connection c = pool.getConnection()) {
                SchemaCheck.problem(c, config.tables());
            } catch (SQLException | RuntimeException e) {
                log.debug("rendering the relay's statements ahead of its start failed: {}", Redaction.scrub(e.toString()));
            }
        }, "txbox-relay-start");
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void awaitQuietly(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private HttpEndpoints.Readiness readiness() {
        Relay r = relay;
        if (r == null) {
            return new HttpEndpoints.Readiness(false, Map.of("relay", "not started"));
        }
        RelayStatus.Health h = r.health(config.healthTimeout());
        Map<String, String> checks = new LinkedHashMap<>();
        checks.put("database", h.database());
        for (Destination d : config.destinations().values()) {
            String state = h.brokers().get(d.name());
            checks.put(d.broker().id() + ":" + d.name(), state == null ? "UP" : state);
        }
        // parked keys are shown, not a failure: the relay runs, an operator is needed for those keys
        io.micrometer.core.instrument.Gauge parked = registry.find(RelayMetrics.PARKED_KEYS).gauge();
        io.micrometer.core.instrument.Gauge parkedAge = registry.find(RelayMetrics.PARKED_OLDEST_AGE).gauge();
        if (parked != null && parkedAge != null) {
            long keys = (long) parked.value();
            checks.put("parkedKeys", keys == 0 ? "UP: none" : "UP: " + keys + " routing key" + (keys == 1 ? "" : "s")
                    + " parked at a dead letter, the longest for " + (long) parkedAge.value() + " s (txbox-relay dead list)");
        }
        boolean up = h.up() && r.status().state() == RelayStatus.State.RUNNING;
        if (r.status().state() != RelayStatus.State.RUNNING) {
            checks.put("relay", r.status().state().name());
        }
        return new HttpEndpoints.Readiness(up, checks);
    }

    /** The port /health and /metrics listen on. */
    public int httpPort() {
        HttpEndpoints h = http;
        if (h == null) {
            throw new IllegalStateException("not started");
        }
        return h.port();
    }

    /** The running relay. */
    public Relay relay() {
        Relay r = relay;
        if (r == null) {
            throw new IllegalStateException("not started");
        }
        return r;
    }

    /** The registry behind /metrics. */
    public PrometheusMeterRegistry registry() {
        return registry;
    }

    /**
     * Stops gracefully; see the class comment for the order. Idempotent.
     *
     * @throws TxboxException if some part failed to close (after every part was tried)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        String id = relay != null ? relay.id() : "txbox-relay";
        if (http != null) {
            http.stopping();
        }
        TxboxException failure = null;
        if (relay != null) {
            log.info("{} - stopping: finishing in-flight batches and releasing lanes", id);
            try {
                relay.close();
            } catch (RuntimeException e) {
                failure = new TxboxException("relay did not stop cleanly: " + Redaction.scrub(e.toString()), e);
            }
        }
        while (!closeables.isEmpty()) {
            AutoCloseable c = closeables.pop();
            try {
                c.close();
            } catch (Exception e) {
                log.warn("{} - closing {} failed: {}", id, c.getClass().getSimpleName(), Redaction.scrub(e.toString()));
                if (failure == null) {
                    failure = new TxboxException("closing " + c.getClass().getSimpleName() + " failed: "
                            + Redaction.scrub(e.toString()), e);
                }
            }
        }
        registry.close();
        if (failure != null) {
            throw failure;
        }
    }
}
