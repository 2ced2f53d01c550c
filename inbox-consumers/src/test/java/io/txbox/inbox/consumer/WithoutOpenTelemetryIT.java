package io.txbox.inbox.consumer;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.consumer.internal.Decision;
import io.txbox.inbox.consumer.internal.Delivery;
import io.txbox.internal.Tracing;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.ChildJvm;
import io.txbox.testkit.TestPostgres;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.ds.PGSimpleDataSource;

/** Without the optional OpenTelemetry API, a consumer still runs its deliveries and hands the trace headers on. */
class WithoutOpenTelemetryIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    static final String TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    /** A consumer builder as the broker adapters extend it. */
    static final class Builder extends ConsumerBuilder<Builder> {
        Builder(Inbox inbox, DataSource ds, Handler handler) {
            super(inbox, ds, handler);
        }

        @Override
        protected Builder self() {
            return this;
        }

        Decision run(Delivery delivery) {
            return processor().process(delivery);
        }
    }

    /** Runs one delivery through a consumer on the database {@code args} name and prints what happened. */
    public static void main(String[] args) {
        try {
            boolean loadable;
            try {
                Class.forName("io.opentelemetry.context.Context");
                loadable = true;
            } catch (ClassNotFoundException e) {
                loadable = false;
            }
            PGSimpleDataSource ds = new PGSimpleDataSource();
            ds.setUrl(args[0]);
            ds.setUser(args[1]);
            ds.setPassword(args[2]);
            Inbox inbox = Inbox.builder("no-otel").tables(TxboxTables.inSchema(args[3])).build();
            Decision d = new Builder(inbox, ds, (tx, m) -> {
                System.out.println("HANDLED traceparent=" + m.header("traceparent"));
                return null;
            }).run(new Delivery("t-0@1", null, "k1".getBytes(UTF_8), "x".getBytes(UTF_8),
                    Map.of("traceparent", TRACEPARENT), false));
            System.out.println("OPENTELEMETRY loadable=" + loadable + " available=" + Tracing.available());
            System.out.println("DECIDED " + d.getClass().getSimpleName());
        } catch (Throwable t) {
            System.out.println("THREW " + t);
        }
    }

    @Test
    void consumer_withoutOpenTelemetryApi_runsTheHandlerWithTheTraceHeaders() {
        TxboxMigrations.migrate(PG.dataSource(), TxboxTables.inSchema(PG.schema()));

        ChildJvm.Result r = ChildJvm.run(WithoutOpenTelemetryIT.class, e -> !e.contains("opentelemetry"),
                Duration.ofSeconds(90), PG.jdbcUrl(), PG.user(), String.valueOf(PG.password()), PG.schema());

        assertThat(r.output()).contains("OPENTELEMETRY loadable=false available=false", "HANDLED traceparent=" + TRACEPARENT,
                "DECIDED Ack").doesNotContain("THREW", "NoClassDefFoundError");
    }
}
