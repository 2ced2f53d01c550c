package io.txbox.relay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.TxboxTables;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.cli.TxboxCliTest.Result;
import io.txbox.testkit.TestPostgres;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Every admin command in-process against a real PostgreSQL schema. */
class AdminCliIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    @TempDir
    static Path dir;

    static Path config;
    static TxboxTables tables;
    static final ObjectMapper JSON = new ObjectMapper();

    @BeforeAll
    static void migrateThroughTheCli() throws Exception {
        tables = TxboxTables.inSchema(PG.schema());
        config = dir.resolve("relay.properties");
        Files.writeString(config, String.join("\n",
                "txbox.jdbc.url=" + PG.jdbcUrl(),
                "txbox.jdbc.user=" + PG.user(),
                "txbox.jdbc.password=" + PG.password(),
                "txbox.schema=" + PG.schema()));
        Result r = cli("migrate");
        assertThat(r.code()).as(r.err()).isZero();
        var applied = io.txbox.migrations.TxboxMigrations.flyway(PG.dataSource(), tables).info().applied();
        assertThat(r.out()).contains("schema " + PG.schema() + ": " + applied.length
                + " migration(s) applied, now at version " + latestVersion());
    }

    static Result cli(String... args) {
        String[] all = new String[args.length + 2];
        System.arraycopy(args, 0, all, 0, args.length);
        all[args.length] = "--config";
        all[args.length + 1] = config.toString();
        return TxboxCliTest.run(Map.of(), all);
    }

    static JsonNode json(Result r) throws Exception {
        assertThat(r.code()).as(r.err()).isZero();
        return JSON.readTree(r.out());
    }

    @BeforeEach
    void empty() throws Exception {
        sql("truncate " + table(tables.outboxTable()) + ", " + table(tables.outboxDeadTable()) + ", " + table(tables.inboxTable())
                + ", " + table(tables.outboxKeyHoldTable()));
    }

    static String table(String name) {
        return tables.qualified(name);
    }

    static void sql(String statement) throws Exception {
        try (Connection c = PG.connection(); Statement s = c.createStatement()) {
            s.execute(statement);
        }
    }

    static long count(String where) throws Exception {
        try (Connection c = PG.connection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("select count(*) from " + where)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static void dead(long id, String stepKey, String destination, String age) throws Exception {
        sql("insert into " + table(tables.outboxDeadTable()) + " (id, step_key, original_key, destination, routing_key, lane,"
                + " payload, header_names, header_values, content_type, traceparent, created_at, attempts, reason, dead_at)"
                + " values (" + id + ", '" + stepKey + "', 'orig', '" + destination + "', 'rk', 3, convert_to('{\"secret\":1}', 'UTF8'),"
                + " array['x-tenant'], array['t1'], 'application/json', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',"
                + " now() - interval '" + age + "', 10, 'broker said no: topic missing', now() - interval '" + age + "')");
    }

    static void send(String key) throws Exception {
        try (Connection c = PG.connection()) {
            c.setAutoCommit(false);
            Outbox.builder().tables(tables).build().send(c, OutboxMessage.builder(StepKey.of(key, "pay"), "payments")
                    .payload("{}").build());
            c.commit();
        }
    }

    @Test
    void adminCommands_emptySchema_sayRunMigrateInsteadOfSql() throws Exception {
        String schema = PG.newSchema("unmigrated");
        Path empty = dir.resolve("empty.properties");
        Files.writeString(empty, String.join("\n",
                "txbox.jdbc.url=" + PG.jdbcUrl(),
                "txbox.jdbc.user=" + PG.user(),
                "txbox.jdbc.password=" + PG.password(),
                "txbox.schema=" + schema));
        for (String[] command : new String[][] {{"status"}, {"status", "--json"}, {"dead", "list"},
                {"dead", "retry", "--all"}, {"dead", "purge", "--older-than", "7d"}, {"inbox", "purge", "--older-than", "30d"}}) {
            String[] args = java.util.Arrays.copyOf(command, command.length + 2);
            args[command.length] = "--config";
            args[command.length + 1] = empty.toString();
            Result r = TxboxCliTest.run(Map.of(), args);
            assertThat(r.code()).as(String.join(" ", command)).isEqualTo(TxboxCli.FAILED);
            assertThat(r.err()).as(String.join(" ", command))
                    .contains("error: schema " + schema + " has no txbox tables: run TxboxMigrations.migrate (or `txbox-relay migrate`) first")
                    .doesNotContainIgnoringCase("select").doesNotContain("does not exist");
            assertThat(r.out()).isEmpty();
        }
    }

    @Test
    void adminCommands_fileWithIncompleteBrokerSettings_needOnlyJdbcKeys() throws Exception {
        Path shared = dir.resolve("shared.properties");
        Files.writeString(shared, String.join("\n",
                "txbox.jdbc.url=" + PG.jdbcUrl(),
                "txbox.jdbc.user=" + PG.user(),
                "txbox.jdbc.password=" + PG.password(),
                "txbox.schema=" + PG.schema(),
                "txbox.destination.shipping=rabbitmq:shipping",
                "txbox.destination.payments=kafka:payments.v1",
                "txbox.relay.batch-size=lots"));
        for (String[] command : new String[][] {{"status"}, {"dead", "list"}, {"inbox", "purge", "--older-than", "30d"},
                {"migrate"}}) {
            String[] args = java.util.Arrays.copyOf(command, command.length + 2);
            args[command.length] = "--config";
            args[command.length + 1] = shared.toString();
            Result r = TxboxCliTest.run(Map.of(), args);
            assertThat(r.code()).as(String.join(" ", command) + ": " + r.err()).isZero();
        }
        Result run = TxboxCliTest.run(Map.of(), "run", "--check", "--config", shared.toString());
        assertThat(run.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(run.err()).contains("txbox.rabbitmq.uri is required").contains("txbox.kafka.bootstrap-servers is required")
                .contains("txbox.relay.batch-size");
    }

    @Test
    void adminCommands_badJdbcKey_stillRejected() throws Exception {
        Path typo = dir.resolve("typo.properties");
        Files.writeString(typo, String.join("\n", "txbox.jdbc.url=" + PG.jdbcUrl(), "txbox.jdbc.usr=postgres",
                "txbox.jdbc.connection-timeout=soon"));
        Result r = TxboxCliTest.run(Map.of(), "status", "--config", typo.toString());
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("txbox.jdbc.usr (typo.properties) is not a known key; did you mean txbox.jdbc.user?")
                .contains("txbox.jdbc.connection-timeout = \"soon\"");
    }

    @Test
    void status_closedPort_failsWithinTheConnectTimeout() throws Exception {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort(); // closed again before the command runs: connections are refused
        }
        Path down = dir.resolve("down.properties");
        Files.writeString(down, "txbox.jdbc.url=jdbc:postgresql://127.0.0.1:" + port + "/test\ntxbox.jdbc.user=postgres\n");

        long start = System.nanoTime();
        Result r = TxboxCliTest.run(Map.of(), "status", "--config", down.toString());
        java.time.Duration took = java.time.Duration.ofNanos(System.nanoTime() - start);
        assertThat(r.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(r.err()).contains("error: cannot connect to the database at jdbc:postgresql://127.0.0.1:" + port
                + "/test (txbox.jdbc.url)").contains("refused");
        assertThat(took).as("default --connect-timeout 3s").isLessThan(java.time.Duration.ofSeconds(6));

        start = System.nanoTime();
        r = TxboxCliTest.run(Map.of(), "status", "--connect-timeout", "500ms", "--config", down.toString());
        took = java.time.Duration.ofNanos(System.nanoTime() - start);
        assertThat(r.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(took).isLessThan(java.time.Duration.ofSeconds(3));

        r = TxboxCliTest.run(Map.of(), "status", "--connect-timeout", "100ms", "--config", down.toString());
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("--connect-timeout must be at least 250ms");
    }

    @Test
    void migrate_again_isNoOp() throws Exception {
        JsonNode r = json(cli("migrate", "--json"));
        assertThat(r.get("migrationsExecuted").asInt()).isZero();
        assertThat(r.get("schemaVersion").asText()).isEqualTo(latestVersion());
    }

    /** The newest script's version, so adding a migration does not break these checks. */
    private static String latestVersion() {
        var info = io.txbox.migrations.TxboxMigrations.flyway(PG.dataSource(), tables).info();
        return info.current().getVersion().getVersion();
    }

    @Test
    void status_showsBacklogOldestAgeAndDeadCountsPerTable() throws Exception {
        send("S1");
        send("S2");
        dead(1, "D1:pay", "payments", "1 hour");
        sql("insert into " + table(tables.inboxTable()) + " (consumer, message_key, status, attempts) values ('c', 'k', 'DEAD', 5)");

        JsonNode s = json(cli("status", "--json"));
        assertThat(s.at("/outbox/pending").asLong()).isEqualTo(2);
        assertThat(s.at("/outbox/ready").asLong()).isEqualTo(2);
        assertThat(s.at("/outbox/oldestPendingAgeSeconds").asDouble()).isGreaterThanOrEqualTo(0.0);
        assertThat(s.at("/outbox/dead").asLong()).isEqualTo(1);
        assertThat(s.at("/inbox/dead").asLong()).isEqualTo(1);

        Result text = cli("status");
        assertThat(text.out()).contains("outbox  pending 2 (2 ready now)", "outbox  dead    1", "inbox   dead    1");
    }

    @Test
    void status_empty_showsNoAge() throws Exception {
        JsonNode s = json(cli("status", "--json"));
        assertThat(s.at("/outbox/pending").asLong()).isZero();
        assertThat(s.at("/outbox/oldestPendingAgeSeconds").isNull()).isTrue();
    }

    @Test
    void deadList_showsIdStepKeyDestinationAttemptsReasonAndDeadAt_butNoPayload() throws Exception {
        dead(7, "A:pay", "payments", "2 hours");
        dead(8, "B:ship", "shipping", "1 hour");
        Result r = cli("dead", "list");
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("ID", "STEP KEY", "DESTINATION", "ATTEMPTS", "DEAD AT", "REASON")
                .contains("A:pay", "B:ship", "payments", "broker said no: topic missing").doesNotContain("secret");
        assertThat(r.out().indexOf("B:ship")).as("newest first").isLessThan(r.out().indexOf("A:pay"));

        JsonNode list = json(cli("dead", "list", "--json", "--destination", "shipping", "--payload"));
        assertThat(list).hasSize(1);
        assertThat(list.get(0).get("id").asLong()).isEqualTo(8);
        assertThat(list.get(0).get("attempts").asInt()).isEqualTo(10);
        assertThat(list.get(0).get("payload").asText()).isEqualTo("{\"secret\":1}");
    }

    @Test
    void deadList_none_saysSo() {
        assertThat(cli("dead", "list").out()).contains("no dead outbox entries");
    }

    @Test
    void deadRetry_id_movesTheRowBackWithZeroAttemptsKeepingHeadersAndTrace() throws Exception {
        dead(11, "R:pay", "payments", "1 day");
        dead(12, "Q:pay", "payments", "1 day");
        Result r = cli("dead", "retry", "11");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("requeued 1 dead entry (id 11)");
        assertThat(count(table(tables.outboxDeadTable()))).isEqualTo(1);
        assertThat(count(table(tables.outboxTable()) + " where step_key = 'R:pay' and attempts = 0 and lane = 3"
                + " and header_names = array['x-tenant'] and traceparent like '00-0af7%' and available_at <= now()")).isEqualTo(1);
    }

    /** Parks routing key {@code rk} of {@code destination} at dead row {@code id}, with {@code waiting} rows behind it. */
    static void parked(long id, String destination, int waiting) throws Exception {
        dead(id, "K" + id + ":pay", destination, "2 hours");
        sql("insert into " + table(tables.outboxKeyHoldTable()) + " (row_id, lane, destination, routing_key, parked_at)"
                + " values (" + id + ", " + io.txbox.outbox.Lanes.of("rk", "x") + ", '" + destination + "', 'rk',"
                + " now() - interval '2 hours')");
        // the rows waiting behind a dead row came after it: higher ids
        sql("select setval(pg_get_serial_sequence('" + table(tables.outboxTable()) + "', 'id'), 100000)");
        try (Connection c = PG.connection()) {
            c.setAutoCommit(false);
            for (int i = 0; i < waiting; i++) {
                Outbox.builder().tables(tables).build().send(c, OutboxMessage.builder(StepKey.of("W" + id + "-" + i, "pay"),
                        destination).routingKey("rk").payload("{}").build());
            }
            c.commit();
        }
    }

    @Test
    void deadList_parkedKeys_showAgeAndRowsWaiting_retryKeyResumesIt() throws Exception {
        parked(51, "payments", 2);
        Result text = cli("dead", "list");
        assertThat(text.code()).as(text.err()).isZero();
        assertThat(text.out()).contains("PARKED KEY", "ROWS WAITING", "2h");
        JsonNode keys = json(cli("dead", "list", "--parked", "--json"));
        assertThat(keys).hasSize(1);
        assertThat(keys.get(0).get("routingKey").asText()).isEqualTo("rk");
        assertThat(keys.get(0).get("destination").asText()).isEqualTo("payments");
        assertThat(keys.get(0).get("deadId").asLong()).isEqualTo(51);
        assertThat(keys.get(0).get("waiting").asLong()).isEqualTo(2);
        assertThat(keys.get(0).get("ageSeconds").asLong()).isBetween(7100L, 7300L);

        Result missing = cli("dead", "retry", "--key", "rk");
        assertThat(missing.code()).isNotZero();
        assertThat(missing.err()).contains("--key needs --destination");
        Result r = cli("dead", "retry", "--key", "rk", "--destination", "payments");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("requeued 1 dead entry");
        // back first, with its id: the key's hold stays until the relay publishes it, but it is no longer parked
        assertThat(count(table(tables.outboxTable()) + " where id = 51")).isEqualTo(1);
        assertThat(count(table(tables.outboxKeyHoldTable()) + " where row_id = 51 and parked_at is null")).isEqualTo(1);
        assertThat(cli("dead", "list", "--parked").out()).contains("no parked routing keys");
        Result again = cli("dead", "retry", "--key", "rk", "--destination", "payments");
        assertThat(again.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(again.err()).contains("routing key rk is not parked in destination payments");
    }

    @Test
    void deadSkip_key_dropsTheDeadRowAndReleasesTheKey() throws Exception {
        parked(61, "payments", 1);
        JsonNode r = json(cli("dead", "skip", "--key", "rk", "--destination", "payments", "--json"));
        assertThat(r.get("skipped").asBoolean()).isTrue();
        assertThat(count(table(tables.outboxDeadTable()))).isZero();
        assertThat(count(table(tables.outboxKeyHoldTable()))).isZero();
        assertThat(count(table(tables.outboxTable()))).isEqualTo(1);
        Result again = cli("dead", "skip", "--key", "rk", "--destination", "payments");
        assertThat(again.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(again.err()).contains("is not parked");
    }

    @Test
    void deadPurge_parkedRow_releasesItsKey() throws Exception {
        parked(71, "payments", 1);
        assertThat(json(cli("dead", "purge", "--older-than", "1h", "--json")).get("purged").asLong()).isEqualTo(1);
        assertThat(count(table(tables.outboxKeyHoldTable()))).isZero();
    }

    @Test
    void deadRetry_unknownId_failsWithExitOne() {
        Result r = cli("dead", "retry", "999");
        assertThat(r.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(r.err()).contains("no dead outbox entry has id 999");
    }

    @Test
    void deadRetry_all_ofOneDestination() throws Exception {
        dead(21, "A:pay", "payments", "1 day");
        dead(22, "B:pay", "payments", "1 day");
        dead(23, "C:ship", "shipping", "1 day");
        JsonNode r = json(cli("dead", "retry", "--all", "--destination", "payments", "--json"));
        assertThat(r.get("requeued").asInt()).isEqualTo(2);
        assertThat(count(table(tables.outboxTable()))).isEqualTo(2);
        assertThat(cli("dead", "retry", "--all").out()).contains("requeued 1 dead entry");
        assertThat(count(table(tables.outboxDeadTable()))).isZero();
    }

    @Test
    void deadRetry_stepKeyAlreadyPending_isRemovedNotDuplicated() throws Exception {
        send("P");
        dead(31, "P:pay", "payments", "1 day");
        JsonNode r = json(cli("dead", "retry", "31", "--json"));
        assertThat(r.get("requeued").asInt()).isZero();
        assertThat(r.get("alreadyPending").asInt()).isEqualTo(1);
        assertThat(count(table(tables.outboxTable()) + " where step_key = 'P:pay'")).isEqualTo(1);
        assertThat(count(table(tables.outboxDeadTable()))).isZero();
    }

    @Test
    void deadPurge_olderThan_deletesOnlyOlderEntries() throws Exception {
        dead(41, "Old:pay", "payments", "10 days");
        dead(42, "New:pay", "payments", "1 hour");
        JsonNode dry = json(cli("dead", "purge", "--older-than", "7d", "--dry-run", "--json"));
        assertThat(dry.get("wouldPurge").asLong()).isEqualTo(1);
        assertThat(count(table(tables.outboxDeadTable()))).isEqualTo(2);

        Result r = cli("dead", "purge", "--older-than", "P7D");
        assertThat(r.out()).contains("purged 1 dead entry older than 7d");
        assertThat(count(table(tables.outboxDeadTable()) + " where step_key = 'New:pay'")).isEqualTo(1);
        assertThat(count(table(tables.outboxDeadTable()))).isEqualTo(1);
    }

    @Test
    void inboxPurge_olderThan_deletesOnlyOldCompletedEntries() throws Exception {
        String inbox = table(tables.inboxTable());
        sql("insert into " + inbox + " (consumer, message_key, status, completed_at) values"
                + " ('orders', 'old', 'COMPLETED', now() - interval '40 days'),"
                + " ('billing', 'old', 'COMPLETED', now() - interval '40 days'),"
                + " ('orders', 'recent', 'COMPLETED', now() - interval '1 day'),"
                + " ('orders', 'dead', 'DEAD', null),"
                + " ('orders', 'busy', 'PROCESSING', null)");
        sql("update " + inbox + " set received_at = now() - interval '40 days'");

        JsonNode one = json(cli("inbox", "purge", "--older-than", "30d", "--consumer", "billing", "--json"));
        assertThat(one.get("purged").asLong()).isEqualTo(1);
        Result r = cli("inbox", "purge", "--older-than", "30d");
        assertThat(r.out()).contains("purged 1 completed inbox entry older than 30d");
        assertThat(count(inbox)).isEqualTo(3);
        assertThat(count(inbox + " where message_key in ('recent', 'dead', 'busy')")).isEqualTo(3);
    }

    @Test
    void inboxParked_listsParkedKeys_retryAndSkipRecordRequests_unknownKeyFails() throws Exception {
        String parked = table(tables.prefix() + "inbox_parked");
        sql("delete from " + parked);
        sql("insert into " + parked + " (consumer, ordering_key, message_key, head, payload, headers, reason) values"
                + " ('payments', 'order-7', 'order-7:charge', true, '\\x00', '\\x', 'IllegalStateException: card'),"
                + " ('payments', 'order-7', 'order-7:refund', false, '\\x00', '\\x', null)");

        JsonNode list = json(cli("inbox", "parked", "list", "--json"));
        assertThat(list).hasSize(1);
        assertThat(list.get(0).get("consumer").asText()).isEqualTo("payments");
        assertThat(list.get(0).get("orderingKey").asText()).isEqualTo("order-7");
        assertThat(list.get(0).get("deadMessageKey").asText()).isEqualTo("order-7:charge");
        assertThat(list.get(0).get("messages").asInt()).isEqualTo(2);
        assertThat(list.get(0).get("reason").asText()).contains("card");

        Result retry = cli("inbox", "parked", "retry", "--consumer", "payments", "--key", "order-7");
        assertThat(retry.code()).as(retry.err()).isZero();
        assertThat(retry.out()).contains("requested retry of parked key order-7 of consumer payments");
        assertThat(cli("inbox", "parked", "list").out()).contains("order-7", "order-7:charge", "RETRY");
        json(cli("inbox", "parked", "skip", "--consumer", "payments", "--key", "order-7", "--json"));
        assertThat(json(cli("inbox", "parked", "list", "--json")).get(0).get("requested").asText()).isEqualTo("SKIP");

        Result unknown = cli("inbox", "parked", "retry", "--consumer", "payments", "--key", "nope");
        assertThat(unknown.code()).isEqualTo(1);
        assertThat(unknown.err()).contains("consumer payments has no parked key nope");
        sql("delete from " + parked);
        assertThat(cli("inbox", "parked", "list").out()).contains("no parked keys");
    }

    @Test
    void inboxPurge_consumer_purgesItsTenantEntriesToo_likeTheLibrary() throws Exception {
        String inbox = table(tables.inboxTable());
        sql("insert into " + inbox + " (consumer, message_key, status, completed_at) values"
                + " ('orders', 'old', 'COMPLETED', now() - interval '40 days'),"
                + " ('orders@acme', 'old', 'COMPLETED', now() - interval '40 days'),"
                + " ('orders@globex', 'old', 'COMPLETED', now() - interval '40 days'),"
                + " ('orders@acme', 'recent', 'COMPLETED', now() - interval '1 day'),"
                + " ('orders-eu', 'old', 'COMPLETED', now() - interval '40 days')");

        JsonNode dry = json(cli("inbox", "purge", "--older-than", "30d", "--consumer", "orders", "--dry-run", "--json"));
        assertThat(dry.get("wouldPurge").asLong()).isEqualTo(3);
        JsonNode purged = json(cli("inbox", "purge", "--older-than", "30d", "--consumer", "orders", "--json"));
        assertThat(purged.get("purged").asLong()).isEqualTo(3);
        assertThat(count(inbox + " where consumer like 'orders@%' and message_key = 'old'")).isZero();
        assertThat(count(inbox + " where consumer = 'orders@acme' and message_key = 'recent'")).isEqualTo(1);
        assertThat(count(inbox + " where consumer = 'orders-eu'")).as("another consumer's entry").isEqualTo(1);
    }

    @Test
    void databaseUnreachable_exitsOneAndMasksThePassword() throws Exception {
        Path bad = dir.resolve("bad.properties");
        Files.writeString(bad, String.join("\n", "txbox.jdbc.url=jdbc:postgresql://127.0.0.1:1/test?password=url-pw-4242",
                "txbox.jdbc.password=cfg-pw-4343", "txbox.jdbc.connection-timeout=1s"));
        Result r = TxboxCliTest.run(Map.of(), "status", "--config", bad.toString());
        assertThat(r.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(r.err()).contains("cannot connect to the database at jdbc:postgresql://127.0.0.1:1/test?password=****")
                .doesNotContain("url-pw-4242", "cfg-pw-4343");
    }
}
