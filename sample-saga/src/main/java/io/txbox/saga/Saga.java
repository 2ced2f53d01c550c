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
        PrivateKafkaBroker privateBroker = null;
        String kafka = settings.kafkaBootstrap();
        if (kafka == null) {
            out.println("Starting a private Kafka broker (no --kafka given) ...");
            long t = System.nanoTime();
            privateBroker = KafkaBroker.startPrivate();
            kafka = privateBroker.bootstrapServers();
            out.printf("Kafka broker up at %s in %.1f s%n", kafka, (System.nanoTime() - t) / 1e9);
        } else {
            Preflight.kafka(kafka);
        }
        String runId = LocalTime.now().format(DateTimeFormatter.ofPattern("HHmmss"))
                + Long.toString(System.nanoTime() & 0xfff, 36);
        List<AutoCloseable> closeLast = new ArrayList<>();
        if (privateBroker != null) {
            closeLast.add(privateBroker);
        }
        try {
            return run(kafka, rabbit, runId, setupStart, closeLast);
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

    private SagaReport run(String kafka, ConnectionFactory rabbit, String runId, long setupStart,
            List<AutoCloseable> closeLast) throws Exception {
        Brokers brokers = new Brokers(settings, kafka, rabbit, runId);
        brokers.declare();
        closeLast.add(brokers);

        SagaReport.Schemas schemas = new SagaReport.Schemas(settings.schema("order"), settings.schema("payment"),
                settings.schema("shipping"), settings.schema("gateway"));
        ServiceDb orderDb = ServiceDb.create(settings, schemas.order(), 12, OrderService.ddl(schemas.order()));
        closeLast.add(orderDb);
        ServiceDb paymentDb = ServiceDb.create(settings, schemas.payment(), 6, PaymentService.ddl(schemas.payment()));
        closeLast.add(paymentDb);
        ServiceDb shippingDb = ServiceDb.create(settings, schemas.shipping(), 4,
                ShippingService.ddl(schemas.shipping()));
        closeLast.add(shippingDb);
        ServiceDb gatewayDb = ServiceDb.create(settings, schemas.gateway(), 4);
        closeLast.add(gatewayDb);
        try (Connection c = gatewayDb.dataSource().getConnection()) {
            PaymentGateway.createTables(c, schemas.gateway());
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
