package io.txbox.saga;

import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code sample-saga/run}: runs the order saga end to end and prints {@code SAGA-REPORT {json}}.
 * Exits 0 when nothing was lost and nothing happened twice, 1 otherwise, 2 when something it
 * needs is missing.
 */
@Command(name = "sample-saga/run", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Runs the txbox order saga: HTTP -> order -> payment (Kafka) -> shipping (RabbitMQ) -> order, "
                    + "with chaos (client retries, duplicate publishes, relay and consumer restarts, offset "
                    + "rewinds), and prints one line SAGA-REPORT {json}.",
            "Exit status: 0 if nothing was lost and nothing happened twice, 1 otherwise, 2 if something it "
                    + "needs is missing.", ""})
public final class SagaMain implements Callable<Integer> {
    @Option(names = "--orders", defaultValue = "1000", description = "Orders to place (default ${DEFAULT-VALUE}).")
    int orders;

    @Option(names = "--concurrency", defaultValue = "16",
            description = "HTTP requests in flight at once (default ${DEFAULT-VALUE}).")
    int concurrency;

    @Option(names = "--chaos", defaultValue = "medium",
            description = "none|low|medium|high, or 0..3 (default ${DEFAULT-VALUE}).")
    String chaos;

    @Option(names = "--kafka", description = "Kafka bootstrap servers, host:port. Default: start a private broker"
            + " (env TXBOX_SAGA_KAFKA).")
    String kafka;

    @Option(names = "--db", defaultValue = "postgresql",
            description = "postgresql or mariadb: the database of every service (default ${DEFAULT-VALUE}).")
    String db;

    @Option(names = "--jdbc-url", defaultValue = "${env:TXBOX_SAGA_JDBC_URL:-}",
            description = "JDBC URL (default by --db: jdbc:postgresql://127.0.0.1:5432/test or"
                    + " jdbc:mariadb://127.0.0.1:3306/test).")
    String jdbcUrl;

    @Option(names = "--jdbc-user", defaultValue = "${env:TXBOX_SAGA_JDBC_USER:-}",
            description = "Database user (default by --db: postgres or root).")
    String jdbcUser;

    @Option(names = "--jdbc-password", defaultValue = "${env:TXBOX_SAGA_JDBC_PASSWORD:-}",
            description = "Database password (default empty; env TXBOX_SAGA_JDBC_PASSWORD).")
    String jdbcPassword;

    @Option(names = "--amqp-uri", defaultValue = "${env:TXBOX_SAGA_AMQP_URI:-amqp://guest:guest@127.0.0.1:5672/%2F}",
            description = "RabbitMQ URI (default amqp://guest:***@127.0.0.1:5672/%%2F).")
    String amqpUri;

    @Option(names = "--timeout", defaultValue = "120",
            description = "Seconds to wait, after the last order was placed, for every order to finish"
                    + " (default ${DEFAULT-VALUE}).")
    int timeoutSeconds;

    @Option(names = "--schema-prefix", defaultValue = "saga",
            description = "Prefix of the schemas (saga_order, ...), dropped and recreated (default ${DEFAULT-VALUE}).")
    String schemaPrefix;

    @Option(names = "--progress", defaultValue = "2", description = "Seconds between progress lines; 0 for none.")
    int progressSeconds;

    @Override
    public Integer call() throws Exception {
        String kafkaBootstrap = kafka != null ? kafka : System.getenv("TXBOX_SAGA_KAFKA");
        if (!db.equals("postgresql") && !db.equals("mariadb")) {
            System.err.println("sample-saga: --db must be postgresql or mariadb, but was " + db);
            return 2;
        }
        boolean mariadb = db.equals("mariadb");
        String url = !jdbcUrl.isBlank() ? jdbcUrl
                : mariadb ? "jdbc:mariadb://127.0.0.1:3306/test" : "jdbc:postgresql://127.0.0.1:5432/test";
        String user = !jdbcUser.isBlank() ? jdbcUser : mariadb ? "root" : "postgres";
        SagaSettings settings;
        try {
            settings = new SagaSettings(orders, concurrency, Chaos.parse(chaos), url, user, jdbcPassword,
                    amqpUri, kafkaBootstrap == null || kafkaBootstrap.isBlank() ? null : kafkaBootstrap.trim(),
                    Duration.ofSeconds(timeoutSeconds), schemaPrefix, Duration.ofSeconds(progressSeconds));
        } catch (IllegalArgumentException e) {
            System.err.println("sample-saga: " + e.getMessage());
            return 2;
        }
        SagaReport report;
        try {
            report = new Saga(settings, System.out).run();
        } catch (SagaException e) {
            System.err.println("sample-saga: " + e.getMessage());
            return 2;
        }
        System.out.println(report.line());
        System.out.println(report.verdict());
        return report.passed() ? 0 : 1;
    }

    public static void main(String[] args) {
        int status = new CommandLine(new SagaMain()).execute(args);
        System.exit(status);
    }
}
