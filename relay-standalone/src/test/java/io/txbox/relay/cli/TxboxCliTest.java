package io.txbox.relay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class TxboxCliTest {
    record Result(int code, String out, String err) {}

    static Result run(Map<String, String> env, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = TxboxCli.execute(env, new PrintWriter(out), new PrintWriter(err), args);
        return new Result(code, out.toString(), err.toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "run", "migrate", "status", "dead", "dead list", "dead retry", "dead purge", "inbox", "inbox purge",
        "inbox parked", "inbox parked list", "inbox parked retry", "inbox parked skip"})
    void help_everyCommand_printsUsageAndExitsZero(String command) {
        List<String> args = new java.util.ArrayList<>(command.isEmpty() ? List.of() : List.of(command.split(" ")));
        args.add("--help");
        Result r = run(Map.of(), args.toArray(String[]::new));
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("Usage: txbox-relay" + (command.isEmpty() ? "" : " " + command));
    }

    /** A line ending inside a key (after "txbox." or "txbox.relay.batch-") whose next line goes on with the key. */
    private static final Pattern SPLIT_KEY = Pattern.compile("(?s).*\\btxbox[a-z0-9.-]*[.-] *\n\\s*[a-z0-9].*");

    @ParameterizedTest
    @ValueSource(strings = {"", "run", "migrate", "status", "dead list", "dead retry", "dead purge", "inbox purge",
        "inbox parked list", "inbox parked retry", "inbox parked skip"})
    void help_everyCommand_wrapsAtWordsWithinTheWidthAndNeverSplitsAKey(String command) {
        List<String> args = new java.util.ArrayList<>(command.isEmpty() ? List.of() : List.of(command.split(" ")));
        args.add("--help");
        String help = run(Map.of(), args.toArray(String[]::new)).out().replace("\r\n", "\n");
        assertThat(help.lines()).allSatisfy(line -> assertThat(line.length()).as(line).isLessThanOrEqualTo(80));
        assertThat(help).as(help).doesNotMatch(SPLIT_KEY);
    }

    @Test
    void noCommand_isUsageError() {
        Result r = run(Map.of());
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("Missing command");
    }

    @Test
    void deadPurge_withoutOlderThan_isUsageError() {
        Result r = run(Map.of(), "dead", "purge");
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("--older-than");
    }

    @Test
    void inboxPurge_badDuration_namesIt() {
        Result r = run(Map.of(), "inbox", "purge", "--older-than", "soon");
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("'soon' is not a positive duration");
    }

    @Test
    void deadRetry_idAndAll_areExclusive() {
        assertThat(run(Map.of(), "dead", "retry", "5", "--all").code()).isEqualTo(TxboxCli.USAGE);
        assertThat(run(Map.of(), "dead", "retry").code()).isEqualTo(TxboxCli.USAGE);
    }

    @Test
    void invalidConfig_exitsTwoNamingKeyAndValue_withoutSecrets() {
        Result r = run(Map.of("TXBOX_JDBC_URL", "jdbc:postgresql://h/db", "TXBOX_JDBC_PASSWORD", "cli-secret-99",
                "TXBOX_JDBC_POOL_SIZE", "many"), "status");
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("txbox.jdbc.pool-size = \"many\" (env TXBOX_JDBC_POOL_SIZE)").doesNotContain("cli-secret-99");

        r = run(Map.of("TXBOX_JDBC_URL", "jdbc:postgresql://h/db", "TXBOX_JDBC_PASSWORD", "cli-secret-99",
                "TXBOX_RELAY_WORKERS", "many", "TXBOX_DESTINATION_PAYMENTS", "kafka:payments",
                "TXBOX_KAFKA_BOOTSTRAP_SERVERS", "k:9092"), "run", "--check");
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("txbox.relay.workers = \"many\" (env TXBOX_RELAY_WORKERS)").doesNotContain("cli-secret-99");
    }

    @Test
    void runCheck_printsMaskedConfig() {
        Result r = run(Map.of("TXBOX_JDBC_URL", "jdbc:postgresql://localhost/db", "TXBOX_JDBC_PASSWORD", "cli-secret-98",
                "TXBOX_RABBITMQ_URI", "amqp://app:rabbit-pw-97@localhost:5672", "TXBOX_DESTINATION_SHIPPING", "rabbitmq:shipping"),
                "run", "--check");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("txbox.jdbc.password=****", "amqp://app:****@localhost:5672", "configuration is valid")
                .doesNotContain("cli-secret-98", "rabbit-pw-97");
    }

    @Test
    void runCheck_rabbitUriThatWouldFallBackToLocalhost_isInvalid() {
        Result r = run(Map.of("TXBOX_JDBC_URL", "jdbc:postgresql://h/db",
                "TXBOX_RABBITMQ_URI", "amqp://relay:rabbit-pw-96@127.0.0.1:notaport/%2f", "TXBOX_DESTINATION_SHIPPING", "rabbitmq:shipping"),
                "run", "--check");
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("txbox.rabbitmq.uri (env TXBOX_RABBITMQ_URI)", "port \"notaport\"")
                .doesNotContain("rabbit-pw-96");
        assertThat(r.out()).doesNotContain("configuration is valid");
    }

    private static Result runCheck(String... lines) throws IOException {
        Path file = Files.createTempFile("relay", ".properties");
        try {
            Files.writeString(file, String.join("\n", lines));
            return run(Map.of(), "run", "--check", "--config", file.toString());
        } finally {
            Files.delete(file);
        }
    }

    @Test
    void runCheck_valueWithATrailingComment_isInvalidNotAnExchangeNamedWithTheComment() throws IOException {
        Result r = runCheck("txbox.jdbc.url=jdbc:postgresql://localhost/db",
                "txbox.rabbitmq.uri=amqp://localhost:5672",
                "txbox.destination.shipping=rabbitmq:shipping  # the shipping exchange");
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("txbox.destination.shipping = \"rabbitmq:shipping  # the shipping exchange\"")
                .contains("a properties file has no end-of-line comments");
        assertThat(r.out()).doesNotContain("configuration is valid");
    }

    @Test
    void runCheck_jdbcUrlNoDriverAccepts_namesTheKey() throws IOException {
        Result r = runCheck("txbox.jdbc.url=jdbc:postgres://localhost:5432/db",
                "txbox.rabbitmq.uri=amqp://localhost:5672", "txbox.destination.shipping=rabbitmq:shipping");
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("txbox.jdbc.url = \"jdbc:postgres://localhost:5432/db\"")
                .contains("no JDBC driver accepts this URL").contains("jdbc:postgresql://");
        assertThat(r.out()).doesNotContain("configuration is valid");
    }

    @Test
    void runCheck_unknownHosts_nameTheKeyAndTheHost() throws IOException {
        Result r = runCheck("txbox.jdbc.url=jdbc:postgresql://orders-db.invalid:5432/orders",
                "txbox.rabbitmq.uri=amqp://relay:rabbit-pw-95@rabbit.invalid:5672/%2f",
                "txbox.kafka.bootstrap-servers=localhost:9092,kafka-2.invalid:9092",
                "txbox.destination.shipping=rabbitmq:shipping", "txbox.destination.orders=kafka:orders");
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("txbox.jdbc.url: host \"orders-db.invalid\" is unknown")
                .contains("txbox.rabbitmq.uri: host \"rabbit.invalid\" is unknown")
                .contains("txbox.kafka.bootstrap-servers: host \"kafka-2.invalid\" is unknown")
                .doesNotContain("\"localhost\"").doesNotContain("rabbit-pw-95");
        assertThat(r.out()).doesNotContain("configuration is valid");
    }
}
