package io.txbox.inbox.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.ChildJvm;
import io.txbox.testkit.TestPostgres;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.ds.PGSimpleDataSource;

/** Without the optional OpenTelemetry API, the HTTP helper answers requests that carry a traceparent. */
class WithoutOpenTelemetryIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    static final String TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    /** Answers one keyed request on the database {@code args} name and prints what happened. */
    public static void main(String[] args) {
        try {
            PGSimpleDataSource ds = new PGSimpleDataSource();
            ds.setUrl(args[0]);
            ds.setUser(args[1]);
            ds.setPassword(args[2]);
            Inbox keys = Inbox.builder("no-otel-api").tables(TxboxTables.inSchema(args[3]))
                    .fingerprint(HttpIdempotency.fingerprint()).build();
            HttpIdempotency idempotency = HttpIdempotency.builder(keys, ds).build();
            HttpRequestData request = new HttpRequestData("POST", "/orders",
                    Map.of("Idempotency-Key", List.of("k1"), "traceparent", List.of(TRACEPARENT)), "{}".getBytes(UTF_8));
            HttpResponseData response = idempotency.handle(request,
                    (tx, r) -> new HttpResponseData(201, Map.of(), r.header("traceparent").getBytes(UTF_8)));
            System.out.println("ANSWERED " + response.status() + " " + new String(response.body(), UTF_8));
        } catch (Throwable t) {
            System.out.println("THREW " + t);
        }
    }

    @Test
    void handle_withoutOpenTelemetryApi_answersAndTheHandlerSeesTheTraceparent() {
        TxboxMigrations.migrate(PG.dataSource(), TxboxTables.inSchema(PG.schema()));

        ChildJvm.Result r = ChildJvm.run(WithoutOpenTelemetryIT.class, e -> !e.contains("opentelemetry"),
                Duration.ofSeconds(90), PG.jdbcUrl(), PG.user(), String.valueOf(PG.password()), PG.schema());

        assertThat(r.output()).contains("ANSWERED 201 " + TRACEPARENT).doesNotContain("THREW", "NoClassDefFoundError");
    }
}
