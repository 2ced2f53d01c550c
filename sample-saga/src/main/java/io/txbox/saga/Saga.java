package io.txbox.saga;

import com.rabbitmq.client.ConnectionFactory;
import io.txbox.saga.gateway.PaymentGateway;
import io.txbox.saga.order.OrderService;
import io.txbox.saga.payment.PaymentService;
import io.txbox.saga.shipping.ShippingService;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.PrivateKafkaBroker;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * One run of the order saga, from checking the infrastructure to the report. Used by the
 * command line and by {@code SagaIT}.
 *
 * <ol>
 *   <li>Check PostgreSQL and RabbitMQ; use the configured Kafka or start a private broker.
 *   <li>Recreate the four schemas (order, payment, shipping, gateway), each with its own pool
 *       and its own txbox tables.
 *   <li>Start the three services, each with its own relay and consumers, and the HTTP endpoint.
 *   <li>Place the orders over HTTP, with the chaos monkey restarting relays and consumers.
 *   <li>Wait until every accepted order is completed or cancelled, or the drain timeout.
 *   <li>Stop everything and compute the report from the tables.
 * </ol>
 */
public final class Saga {
    private final SagaSettings settings;
    private final PrintStream out;

    public Saga(SagaSettings settings, PrintStream out) {
        this.settings = settings;
        this.out = out;
    }

    public SagaReport run() throws Exception {
        long setupStart = System.nanoTime();
        Preflight.postgres(settings);
        ConnectionFactory rabbit = Preflight.rabbit(settings);
        String runId = LocalTime.now().format(DateTimeFormatter.ofPattern("HHmmss"))
                + Long.toString(System.nanoTime() & 0xfff, 36);
        List<AutoCloseable> closeLast = new ArrayList<>();
        try {
            return run(rabbit, runId, setupStart, closeLast);
        } finally {
            long t = System.nanoTime();
            for (int i = closeLast.size() - 1; i >= 0; i--) {
                try {
                    closeLast.get(i).close();
                } catch (Exception e) {
                    out.println("closing " + closeLast.get(i) + " failed: " + e);
                }
            }
            out.printf("Pools and brokers closed in %.1f s%n", (System.nanoTime() - t) / 1e9);
        }
    }

    /** The configured broker, or a private one started now; it starts while the schemas are made. */
    private CompletableFuture<String> kafka(List<AutoCloseable> closeLast) {
        String configured = settings.kafkaBootstrap();
        if (configured != null) {
            Preflight.kafka(configured);
            return CompletableFuture.completedFuture(configured);
        }
        out.println("Starting a private Kafka broker (no --kafka given) ...");
        long t = System.nanoTime();
        return CompletableFuture.supplyAsync(() -> {
            PrivateKafkaBroker broker = KafkaBroker.startPrivate();
            synchronized (closeLast) {
                closeLast.add(0, broker); // closed last
            }
            out.printf("Kafka broker up at %s in %.1f s%n", broker.bootstrapServers(), (System.nanoTime() - t) / 1e9);
            return broker.bootstrapServers();
        }, daemonThread("saga-kafka-start"));
    }

    private CompletableFuture<ServiceDb> schema(String schema, int poolSize, String[] ddl,
            List<AutoCloseable> closeLast) {
        return CompletableFuture.supplyAsync(() -> {
            ServiceDb db = ServiceDb.create(settings, schema, poolSize, ddl);
            synchronized (closeLast) {
                closeLast.add(db);
            }
            return db;
        }, daemonThread("saga-schema-" + schema));
    }

    private static Executor daemonThread(String name) {
        return task -> {
            Thread t = new Thread(task, name);
            t.setDaemon(true);
            t.start();
        };
    }

    private static <T> T join(CompletableFuture<T> future) throws Exception {
        try {
            return future.join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof Exception ex ? ex : e;
        }
    }

    private SagaReport run(ConnectionFactory rabbit, String runId, long setupStart, List<AutoCloseable> closeLast)
            throws Exception {
        CompletableFuture<String> kafkaStart = kafka(closeLast);
        SagaReport.Schemas schemas = new SagaReport.Schemas(settings.schema("order"), settings.schema("payment"),
                settings.schema("shipping"), settings.schema("gateway"));
        CompletableFuture<ServiceDb> orderStart = schema(schemas.order(), 12, OrderService.ddl(schemas.order()),
                closeLast);
        CompletableFuture<ServiceDb> paymentStart = schema(schemas.payment(), 10,
                PaymentService.ddl(schemas.payment()), closeLast);
        CompletableFuture<ServiceDb> shippingStart = schema(schemas.shipping(), 6,
                ShippingService.ddl(schemas.shipping()), closeLast);
        CompletableFuture<ServiceDb> gatewayStart = schema(schemas.gateway(), 6, PaymentGateway.ddl(schemas.gateway()),
                closeLast);
        // wait for every start, so that whatever did start gets closed even if another failed
        CompletableFuture.allOf(orderStart, paymentStart, shippingStart, gatewayStart, kafkaStart)
                .exceptionally(e -> null).join();
        ServiceDb orderDb = join(orderStart);
        ServiceDb paymentDb = join(paymentStart);
        ServiceDb shippingDb = join(shippingStart);
        ServiceDb gatewayDb = join(gatewayStart);
        String kafka = join(kafkaStart);

        Brokers brokers = new Brokers(settings, kafka, rabbit, runId);
        brokers.declare();
        synchronized (closeLast) {
            closeLast.add(brokers);
        }
        PaymentGateway gateway = new PaymentGateway(gatewayDb.dataSource(), schemas.gateway(),
                settings.chaos().gatewayTimeouts());

        OrderService order = new OrderService(orderDb, brokers);
        PaymentService payment = new PaymentService(paymentDb, brokers, gateway);
        ShippingService shipping = new ShippingService(shippingDb, brokers);
        List<SagaService> services = List.of(order, payment, shipping);
        double setupSeconds = (System.nanoTime() - setupStart) / 1e9;

        Progress progress;
        OrderClient.Stats client;
        ChaosMonkey monkey;
        boolean drained;
        double seconds;
        try (Connection auditor = DriverManager.getConnection(settings.jdbcUrl(), settings.jdbcUser(),
                settings.jdbcPassword())) {
            try {
                for (SagaService s : services) {
                    s.start();
                }
                String base = order.startHttp(0);
                out.printf("Services up in %.1f s; placing %d orders at concurrency %d, chaos %s, HTTP %s/orders%n",
                        setupSeconds, settings.orders(), settings.concurrency(), settings.chaos().name(), base);

                progress = new Progress(schemas);
                OrderClient orders = new OrderClient(base, settings.chaos(), runId);
                monkey = new ChaosMonkey(services, settings.chaos().restartEvery());
                try (Ticker ticker = new Ticker(progress, orders)) {
                    try {
                        client = orders.run(settings.orders(), settings.concurrency());
                        drained = drain(auditor, progress, monkey);
                    } finally {
                        monkey.close();
                    }
                }
                seconds = progress.seconds();
                progress.print(out, progress.read(auditor), settings.orders(), client.duplicateRequests());
            } finally {
                long t = System.nanoTime();
                for (SagaService s : services) {
                    s.close();
                }
                out.printf("Services stopped in %.1f s%n", (System.nanoTime() - t) / 1e9);
            }
            Map<String, Object> extra = new LinkedHashMap<>();
            extra.put("requested", settings.orders());
            extra.put("chaos", settings.chaos().name());
            extra.put("chaos_published_copies", brokers.chaosCopies());
            extra.put("chaos_rewound_records", brokers.rewoundRecords());
            extra.put("chaos_relay_restarts", monkey.relayRestarts());
            extra.put("chaos_consumer_restarts", monkey.consumerRestarts());
            extra.put("client", OrderClient.describe(client));
            extra.put("drained", drained);
            extra.put("setup_seconds", Math.round(setupSeconds * 10) / 10.0);
            return SagaReport.compute(auditor, schemas, client, seconds, extra);
        }
    }

    /** Prints a progress line every {@code progressEvery}, on a connection of its own. */
    private final class Ticker implements AutoCloseable {
        private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "saga-progress");
            t.setDaemon(true);
            return t;
        });
        private @Nullable Connection connection;

        Ticker(Progress progress, OrderClient orders) {
            long every = settings.progressEvery().toMillis();
            if (every > 0) {
                timer.scheduleWithFixedDelay(() -> tick(progress, orders), every, every, TimeUnit.MILLISECONDS);
            }
        }

        private void tick(Progress progress, OrderClient orders) {
            try {
                if (connection == null) {
                    connection = DriverManager.getConnection(settings.jdbcUrl(), settings.jdbcUser(),
                            settings.jdbcPassword());
                }
                progress.print(out, progress.read(connection), settings.orders(), orders.duplicateRequests());
            } catch (SQLException e) {
                out.println("progress: " + e.getMessage());
                closeQuietly(connection);
                connection = null;
            }
        }

        @Override
        public void close() throws InterruptedException {
            timer.shutdown();
            timer.awaitTermination(10, TimeUnit.SECONDS);
            closeQuietly(connection);
        }
    }

    private static void closeQuietly(@Nullable Connection c) {
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // closing anyway
            }
        }
    }

    /**
     * Waits until every accepted order is completed or cancelled; false if the drain timeout
     * came first. The chaos monkey goes on until 90 % are done, so restarts hit messages in flight
     * at every step of the saga, and leaves the tail alone.
     */
    private boolean drain(Connection auditor, Progress progress, ChaosMonkey monkey)
            throws SQLException, InterruptedException {
        long deadline = System.nanoTime() + settings.drainTimeout().toNanos();
        while (System.nanoTime() < deadline) {
            Progress.Snapshot p = progress.read(auditor);
            if (p.finished() >= p.accepted()) {
                return true;
            }
            if (p.finished() >= 0.9 * p.accepted()) {
                monkey.close();
            }
            Thread.sleep(100);
        }
        out.println("Drain timeout " + settings.drainTimeout() + " reached with orders still open.");
        return false;
    }
}
