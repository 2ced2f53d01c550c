package io.txbox.relay.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.TxboxTables;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.relay.cli.TxboxCliTest.Result;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/** Every admin command in-process against a real schema, on PostgreSQL and on MariaDB. */
class AdminCliIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @TempDir
    static Path dir;

    static final ObjectMapper JSON = new ObjectMapper();
    /** Each database's config file, written and migrated through the CLI once. */
    static final Map<TestDatabase.Kind, Path> CONFIGS = new EnumMap<>(TestDatabase.Kind.class);

    @BeforeAll
    static void migrateThroughTheCli() throws Exception {
        for (TestDatabase db : DBS.all()) {
            Path config = dir.resolve("relay-" + db.kind().name().toLowerCase(java.util.Locale.ROOT) + ".properties");
            Files.writeString(config, String.join("\n",
                    "txbox.jdbc.url=" + db.jdbcUrl(),
                    "txbox.jdbc.user=" + db.user(),
                    "txbox.jdbc.password=" + db.password(),
                    "txbox.schema=" + db.schema()));
            CONFIGS.put(db.kind(), config);
            Db d = new Db(db);
            Result r = d.cli("migrate");
            assertThat(r.code()).as(db + ": " + r.err()).isZero();
            var applied = io.txbox.migrations.TxboxMigrations.flyway(db.dataSource(), d.tables).info().applied();
            assertThat(r.out()).as(db.toString()).contains("schema " + db.schema() + ": " + applied.length
                    + " migration(s) applied, now at version " + d.latestVersion());
        }
    }

    /** {@code db}'s migrated schema, its outbox, dead, key-hold and inbox tables emptied. */
    static Db empty(TestDatabase db) throws Exception {
        Db d = new Db(db);
        for (String table : new String[] {d.tables.outboxTable(), d.tables.outboxDeadTable(), d.tables.inboxTable(),
                d.tables.outboxKeyHoldTable()}) {
            d.sql("delete from " + d.table(table));
        }
        return d;
    }

    /**
     * One database's txbox schema: the CLI on its config file and the tests' own SQL. The SQL is
     * the same on both databases except in {@link #textArray} and {@link #nextIdsFrom}.
     */
    static final class Db {
        final TestDatabase db;
        final TxboxTables tables;
        final Path config;

        Db(TestDatabase db) {
            this.db = db;
            this.tables = TxboxTables.inSchema(db.schema());
            this.config = CONFIGS.get(db.kind());
        }

        Result cli(String... args) {
            String[] all = new String[args.length + 2];
            System.arraycopy(args, 0, all, 0, args.length);
            all[args.length] = "--config";
            all[args.length + 1] = config.toString();
            return TxboxCliTest.run(Map.of(), all);
        }

        /** The newest script's version, so adding a migration does not break these checks. */
        String latestVersion() {
            var info = io.txbox.migrations.TxboxMigrations.flyway(db.dataSource(), tables).info();
            return info.current().getVersion().getVersion();
        }

        String table(String name) {
            return db.qualified(db.schema(), name);
        }

        /** Runs {@code statement} with {@code params} bound in order (a byte[] as bytes). */
        void sql(String statement, Object... params) throws Exception {
            try (Connection c = db.connection(); PreparedStatement s = c.prepareStatement(statement)) {
                for (int i = 0; i < params.length; i++) {
                    s.setObject(i + 1, params[i]);
                }
                s.execute();
            }
        }

        long count(String where) throws Exception {
            try (Connection c = db.connection(); PreparedStatement s = c.prepareStatement("select count(*) from " + where);
                    ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }

        /** A list of strings as the header columns hold it: text[] on PostgreSQL, a JSON array on MariaDB. */
        String textArray(String value) {
            return db.kind() == TestDatabase.Kind.POSTGRESQL ? "array['" + value + "']" : "json_array('" + value + "')";
        }

        /** Makes the outbox's next ids start above {@code id}. */
        void nextIdsFrom(long id) throws Exception {
            String outbox = table(tables.outboxTable());
            sql(db.kind() == TestDatabase.Kind.POSTGRESQL
                    ? "select setval(pg_get_serial_sequence('" + outbox + "', 'id'), " + id + ")"
                    : "alter table " + outbox + " auto_increment = " + (id + 1));
        }

        void dead(long id, String stepKey, String destination, Duration age) throws Exception {
            sql("insert into " + table(tables.outboxDeadTable()) + " (id, step_key, original_key, destination, routing_key, lane,"
                    + " payload, header_names, header_values, content_type, traceparent, created_at, attempts, reason, dead_at)"
                    + " values (" + id + ", '" + stepKey + "', 'orig', '" + destination + "', 'rk', 3, ?,"
                    + " " + textArray("x-tenant") + ", " + textArray("t1") + ", 'application/json',"
                    + " '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',"
                    + " " + ago(age) + ", 10, 'broker said no: topic missing', " + ago(age) + ")",
                    (Object) "{\"secret\":1}".getBytes(StandardCharsets.UTF_8));
        }

        void send(String key) throws Exception {
            try (Connection c = db.connection()) {
                c.setAutoCommit(false);
                Outbox.builder().tables(tables).build().send(c, OutboxMessage.builder(StepKey.of(key, "pay"), "payments")
                        .payload("{}").build());
                c.commit();
            }
        }

        /** Parks routing key {@code rk} of {@code destination} at dead row {@code id}, with {@code waiting} rows behind it. */
        void parked(long id, String destination, int waiting) throws Exception {
            dead(id, "K" + id + ":pay", destination, Duration.ofHours(2));
            sql("insert into " + table(tables.outboxKeyHoldTable()) + " (row_id, lane, destination, routing_key, parked_at)"
                    + " values (" + id + ", " + io.txbox.outbox.Lanes.of("rk", "x") + ", '" + destination + "', 'rk',"
                    + " " + ago(Duration.ofHours(2)) + ")");
            // the rows waiting behind a dead row came after it: higher ids
            nextIdsFrom(100000);
            try (Connection c = db.connection()) {
                c.setAutoCommit(false);
                for (int i = 0; i < waiting; i++) {
                    Outbox.builder().tables(tables).build().send(c, OutboxMessage.builder(StepKey.of("W" + id + "-" + i, "pay"),
                            destination).routingKey("rk").payload("{}").build());
                }
                c.commit();
            }
        }
    }

    /** SQL for the time {@code age} ago; {@code interval 'n' second} reads the same on both databases. */
    static String ago(Duration age) {
        return "current_timestamp(6) - interval '" + age.toSeconds() + "' second";
    }

    static JsonNode json(Result r) throws Exception {
        assertThat(r.code()).as(r.err()).isZero();
        return JSON.readTree(r.out());
    }

    /** {@code db}'s JDBC URL with its host and port replaced: a server of the same kind at {@code hostPort}. */
    static String urlAt(TestDatabase db, String hostPort) {
        String url = db.jdbcUrl();
        return url.substring(0, url.indexOf("//") + 2) + hostPort;
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void adminCommands_emptySchema_sayRunMigrateInsteadOfSql(TestDatabase db) throws Exception {
        String schema = db.newSchema("unmigrated");
        Path empty = dir.resolve("empty-" + schema + ".properties");
        Files.writeString(empty, String.join("\n",
                "txbox.jdbc.url=" + db.jdbcUrl(),
                "txbox.jdbc.user=" + db.user(),
                "txbox.jdbc.password=" + db.password(),
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

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void adminCommands_fileWithIncompleteBrokerSettings_needOnlyJdbcKeys(TestDatabase db) throws Exception {
        Path shared = dir.resolve("shared-" + db.schema() + ".properties");
        Files.writeString(shared, String.join("\n",
                "txbox.jdbc.url=" + db.jdbcUrl(),
                "txbox.jdbc.user=" + db.user(),
                "txbox.jdbc.password=" + db.password(),
                "txbox.schema=" + db.schema(),
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

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void adminCommands_badJdbcKey_stillRejected(TestDatabase db) throws Exception {
        Path typo = dir.resolve("typo.properties");
        Files.writeString(typo, String.join("\n", "txbox.jdbc.url=" + db.jdbcUrl(), "txbox.jdbc.usr=postgres",
                "txbox.jdbc.connection-timeout=soon"));
        Result r = TxboxCliTest.run(Map.of(), "status", "--config", typo.toString());
        assertThat(r.code()).isEqualTo(TxboxCli.USAGE);
        assertThat(r.err()).contains("txbox.jdbc.usr (typo.properties) is not a known key; did you mean txbox.jdbc.user?")
                .contains("txbox.jdbc.connection-timeout = \"soon\"");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void status_closedPort_failsWithinTheConnectTimeout(TestDatabase db) throws Exception {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort(); // closed again before the command runs: connections are refused
        }
        String url = urlAt(db, "127.0.0.1:" + port + "/test");
        Path down = dir.resolve("down.properties");
        Files.writeString(down, "txbox.jdbc.url=" + url + "\ntxbox.jdbc.user=" + db.user() + "\n");

        long start = System.nanoTime();
        Result r = TxboxCliTest.run(Map.of(), "status", "--config", down.toString());
        java.time.Duration took = java.time.Duration.ofNanos(System.nanoTime() - start);
        assertThat(r.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(r.err()).contains("error: cannot connect to the database at " + url + " (txbox.jdbc.url)")
                .contains("refused");
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

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void migrate_again_isNoOp(TestDatabase db) throws Exception {
        Db d = empty(db);
        JsonNode r = json(d.cli("migrate", "--json"));
        assertThat(r.get("migrationsExecuted").asInt()).isZero();
        assertThat(r.get("schemaVersion").asText()).isEqualTo(d.latestVersion());
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void status_showsBacklogOldestAgeAndDeadCountsPerTable(TestDatabase db) throws Exception {
        Db d = empty(db);
        d.send("S1");
        d.send("S2");
        d.dead(1, "D1:pay", "payments", Duration.ofHours(1));
        d.sql("insert into " + d.table(d.tables.inboxTable()) + " (consumer, message_key, status, attempts) values ('c', 'k', 'DEAD', 5)");

        JsonNode s = json(d.cli("status", "--json"));
        assertThat(s.at("/outbox/pending").asLong()).isEqualTo(2);
        assertThat(s.at("/outbox/ready").asLong()).isEqualTo(2);
        assertThat(s.at("/outbox/oldestPendingAgeSeconds").asDouble()).isGreaterThanOrEqualTo(0.0);
        assertThat(s.at("/outbox/dead").asLong()).isEqualTo(1);
        assertThat(s.at("/inbox/dead").asLong()).isEqualTo(1);

        Result text = d.cli("status");
        assertThat(text.out()).contains("outbox  pending 2 (2 ready now)", "outbox  dead    1", "inbox   dead    1");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void status_empty_showsNoAge(TestDatabase db) throws Exception {
        Db d = empty(db);
        JsonNode s = json(d.cli("status", "--json"));
        assertThat(s.at("/outbox/pending").asLong()).isZero();
        assertThat(s.at("/outbox/oldestPendingAgeSeconds").isNull()).isTrue();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadList_showsIdStepKeyDestinationAttemptsReasonAndDeadAt_butNoPayload(TestDatabase db) throws Exception {
        Db d = empty(db);
        d.dead(7, "A:pay", "payments", Duration.ofHours(2));
        d.dead(8, "B:ship", "shipping", Duration.ofHours(1));
        Result r = d.cli("dead", "list");
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("ID", "STEP KEY", "DESTINATION", "ATTEMPTS", "DEAD AT", "REASON")
                .contains("A:pay", "B:ship", "payments", "broker said no: topic missing").doesNotContain("secret");
        assertThat(r.out().indexOf("B:ship")).as("newest first").isLessThan(r.out().indexOf("A:pay"));

        JsonNode list = json(d.cli("dead", "list", "--json", "--destination", "shipping", "--payload"));
        assertThat(list).hasSize(1);
        assertThat(list.get(0).get("id").asLong()).isEqualTo(8);
        assertThat(list.get(0).get("attempts").asInt()).isEqualTo(10);
        assertThat(list.get(0).get("payload").asText()).isEqualTo("{\"secret\":1}");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadList_none_saysSo(TestDatabase db) throws Exception {
        Db d = empty(db);
        assertThat(d.cli("dead", "list").out()).contains("no dead outbox entries");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadRetry_id_movesTheRowBackWithZeroAttemptsKeepingHeadersAndTrace(TestDatabase db) throws Exception {
        Db d = empty(db);
        d.dead(11, "R:pay", "payments", Duration.ofDays(1));
        d.dead(12, "Q:pay", "payments", Duration.ofDays(1));
        Result r = d.cli("dead", "retry", "11");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("requeued 1 dead entry (id 11)");
        assertThat(d.count(d.table(d.tables.outboxDeadTable()))).isEqualTo(1);
        assertThat(d.count(d.table(d.tables.outboxTable()) + " where step_key = 'R:pay' and attempts = 0 and lane = 3"
                + " and header_names = " + d.textArray("x-tenant") + " and traceparent like '00-0af7%'"
                + " and available_at <= current_timestamp(6)")).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadList_parkedKeys_showAgeAndRowsWaiting_retryKeyResumesIt(TestDatabase db) throws Exception {
        Db d = empty(db);
        d.parked(51, "payments", 2);
        Result text = d.cli("dead", "list");
        assertThat(text.code()).as(text.err()).isZero();
        assertThat(text.out()).contains("PARKED KEY", "ROWS WAITING", "2h");
        JsonNode keys = json(d.cli("dead", "list", "--parked", "--json"));
        assertThat(keys).hasSize(1);
        assertThat(keys.get(0).get("routingKey").asText()).isEqualTo("rk");
        assertThat(keys.get(0).get("destination").asText()).isEqualTo("payments");
        assertThat(keys.get(0).get("deadId").asLong()).isEqualTo(51);
        assertThat(keys.get(0).get("waiting").asLong()).isEqualTo(2);
        assertThat(keys.get(0).get("ageSeconds").asLong()).isBetween(7100L, 7300L);

        Result missing = d.cli("dead", "retry", "--key", "rk");
        assertThat(missing.code()).isNotZero();
        assertThat(missing.err()).contains("--key needs --destination");
        Result r = d.cli("dead", "retry", "--key", "rk", "--destination", "payments");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("requeued 1 dead entry");
        // back first, with its id: the key's hold stays until the relay publishes it, but it is no longer parked
        assertThat(d.count(d.table(d.tables.outboxTable()) + " where id = 51")).isEqualTo(1);
        assertThat(d.count(d.table(d.tables.outboxKeyHoldTable()) + " where row_id = 51 and parked_at is null")).isEqualTo(1);
        assertThat(d.cli("dead", "list", "--parked").out()).contains("no parked routing keys");
        Result again = d.cli("dead", "retry", "--key", "rk", "--destination", "payments");
        assertThat(again.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(again.err()).contains("routing key rk is not parked in destination payments");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadSkip_key_dropsTheDeadRowAndReleasesTheKey(TestDatabase db) throws Exception {
        Db d = empty(db);
        d.parked(61, "payments", 1);
        JsonNode r = json(d.cli("dead", "skip", "--key", "rk", "--destination", "payments", "--json"));
        assertThat(r.get("skipped").asBoolean()).isTrue();
        assertThat(d.count(d.table(d.tables.outboxDeadTable()))).isZero();
        assertThat(d.count(d.table(d.tables.outboxKeyHoldTable()))).isZero();
        assertThat(d.count(d.table(d.tables.outboxTable()))).isEqualTo(1);
        Result again = d.cli("dead", "skip", "--key", "rk", "--destination", "payments");
        assertThat(again.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(again.err()).contains("is not parked");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadPurge_parkedRow_releasesItsKey(TestDatabase db) throws Exception {
        Db d = empty(db);
        d.parked(71, "payments", 1);
        assertThat(json(d.cli("dead", "purge", "--older-than", "1h", "--json")).get("purged").asLong()).isEqualTo(1);
        assertThat(d.count(d.table(d.tables.outboxKeyHoldTable()))).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadRetry_unknownId_failsWithExitOne(TestDatabase db) throws Exception {
        Db d = empty(db);
        Result r = d.cli("dead", "retry", "999");
        assertThat(r.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(r.err()).contains("no dead outbox entry has id 999");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadRetry_all_ofOneDestination(TestDatabase db) throws Exception {
        Db d = empty(db);
        d.dead(21, "A:pay", "payments", Duration.ofDays(1));
        d.dead(22, "B:pay", "payments", Duration.ofDays(1));
        d.dead(23, "C:ship", "shipping", Duration.ofDays(1));
        JsonNode r = json(d.cli("dead", "retry", "--all", "--destination", "payments", "--json"));
        assertThat(r.get("requeued").asInt()).isEqualTo(2);
        assertThat(d.count(d.table(d.tables.outboxTable()))).isEqualTo(2);
        assertThat(d.cli("dead", "retry", "--all").out()).contains("requeued 1 dead entry");
        assertThat(d.count(d.table(d.tables.outboxDeadTable()))).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadRetry_stepKeyAlreadyPending_isRemovedNotDuplicated(TestDatabase db) throws Exception {
        Db d = empty(db);
        d.send("P");
        d.dead(31, "P:pay", "payments", Duration.ofDays(1));
        JsonNode r = json(d.cli("dead", "retry", "31", "--json"));
        assertThat(r.get("requeued").asInt()).isZero();
        assertThat(r.get("alreadyPending").asInt()).isEqualTo(1);
        assertThat(d.count(d.table(d.tables.outboxTable()) + " where step_key = 'P:pay'")).isEqualTo(1);
        assertThat(d.count(d.table(d.tables.outboxDeadTable()))).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void deadPurge_olderThan_deletesOnlyOlderEntries(TestDatabase db) throws Exception {
        Db d = empty(db);
        d.dead(41, "Old:pay", "payments", Duration.ofDays(10));
        d.dead(42, "New:pay", "payments", Duration.ofHours(1));
        JsonNode dry = json(d.cli("dead", "purge", "--older-than", "7d", "--dry-run", "--json"));
        assertThat(dry.get("wouldPurge").asLong()).isEqualTo(1);
        assertThat(d.count(d.table(d.tables.outboxDeadTable()))).isEqualTo(2);

        Result r = d.cli("dead", "purge", "--older-than", "P7D");
        assertThat(r.out()).contains("purged 1 dead entry older than 7d");
        assertThat(d.count(d.table(d.tables.outboxDeadTable()) + " where step_key = 'New:pay'")).isEqualTo(1);
        assertThat(d.count(d.table(d.tables.outboxDeadTable()))).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void inboxPurge_olderThan_deletesOnlyOldCompletedEntries(TestDatabase db) throws Exception {
        Db d = empty(db);
        String inbox = d.table(d.tables.inboxTable());
        String old = ago(Duration.ofDays(40));
        d.sql("insert into " + inbox + " (consumer, message_key, status, completed_at) values"
                + " ('orders', 'old', 'COMPLETED', " + old + "),"
                + " ('billing', 'old', 'COMPLETED', " + old + "),"
                + " ('orders', 'recent', 'COMPLETED', " + ago(Duration.ofDays(1)) + "),"
                + " ('orders', 'dead', 'DEAD', null),"
                + " ('orders', 'busy', 'PROCESSING', null)");
        d.sql("update " + inbox + " set received_at = " + old);

        JsonNode one = json(d.cli("inbox", "purge", "--older-than", "30d", "--consumer", "billing", "--json"));
        assertThat(one.get("purged").asLong()).isEqualTo(1);
        Result r = d.cli("inbox", "purge", "--older-than", "30d");
        assertThat(r.out()).contains("purged 1 completed inbox entry older than 30d");
        assertThat(d.count(inbox)).isEqualTo(3);
        assertThat(d.count(inbox + " where message_key in ('recent', 'dead', 'busy')")).isEqualTo(3);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void inboxParked_listsParkedKeys_retryAndSkipRecordRequests_unknownKeyFails(TestDatabase db) throws Exception {
        Db d = empty(db);
        String parked = d.table(d.tables.prefix() + "inbox_parked");
        d.sql("delete from " + parked);
        byte[] payload = {0};
        byte[] headers = {};
        d.sql("insert into " + parked + " (consumer, ordering_key, message_key, head, payload, headers, reason) values"
                + " ('payments', 'order-7', 'order-7:charge', true, ?, ?, 'IllegalStateException: card'),"
                + " ('payments', 'order-7', 'order-7:refund', false, ?, ?, null)", payload, headers, payload, headers);

        JsonNode list = json(d.cli("inbox", "parked", "list", "--json"));
        assertThat(list).hasSize(1);
        assertThat(list.get(0).get("consumer").asText()).isEqualTo("payments");
        assertThat(list.get(0).get("orderingKey").asText()).isEqualTo("order-7");
        assertThat(list.get(0).get("deadMessageKey").asText()).isEqualTo("order-7:charge");
        assertThat(list.get(0).get("messages").asInt()).isEqualTo(2);
        assertThat(list.get(0).get("reason").asText()).contains("card");

        Result retry = d.cli("inbox", "parked", "retry", "--consumer", "payments", "--key", "order-7");
        assertThat(retry.code()).as(retry.err()).isZero();
        assertThat(retry.out()).contains("requested retry of parked key order-7 of consumer payments");
        assertThat(d.cli("inbox", "parked", "list").out()).contains("order-7", "order-7:charge", "RETRY");
        json(d.cli("inbox", "parked", "skip", "--consumer", "payments", "--key", "order-7", "--json"));
        assertThat(json(d.cli("inbox", "parked", "list", "--json")).get(0).get("requested").asText()).isEqualTo("SKIP");

        Result unknown = d.cli("inbox", "parked", "retry", "--consumer", "payments", "--key", "nope");
        assertThat(unknown.code()).isEqualTo(1);
        assertThat(unknown.err()).contains("consumer payments has no parked key nope");
        d.sql("delete from " + parked);
        assertThat(d.cli("inbox", "parked", "list").out()).contains("no parked keys");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void inboxPurge_consumer_purgesItsTenantEntriesToo_likeTheLibrary(TestDatabase db) throws Exception {
        Db d = empty(db);
        String inbox = d.table(d.tables.inboxTable());
        String old = ago(Duration.ofDays(40));
        d.sql("insert into " + inbox + " (consumer, message_key, status, completed_at) values"
                + " ('orders', 'old', 'COMPLETED', " + old + "),"
                + " ('orders@acme', 'old', 'COMPLETED', " + old + "),"
                + " ('orders@globex', 'old', 'COMPLETED', " + old + "),"
                + " ('orders@acme', 'recent', 'COMPLETED', " + ago(Duration.ofDays(1)) + "),"
                + " ('orders-eu', 'old', 'COMPLETED', " + old + ")");

        JsonNode dry = json(d.cli("inbox", "purge", "--older-than", "30d", "--consumer", "orders", "--dry-run", "--json"));
        assertThat(dry.get("wouldPurge").asLong()).isEqualTo(3);
        JsonNode purged = json(d.cli("inbox", "purge", "--older-than", "30d", "--consumer", "orders", "--json"));
        assertThat(purged.get("purged").asLong()).isEqualTo(3);
        assertThat(d.count(inbox + " where consumer like 'orders@%' and message_key = 'old'")).isZero();
        assertThat(d.count(inbox + " where consumer = 'orders@acme' and message_key = 'recent'")).isEqualTo(1);
        assertThat(d.count(inbox + " where consumer = 'orders-eu'")).as("another consumer's entry").isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void databaseUnreachable_exitsOneAndMasksThePassword(TestDatabase db) throws Exception {
        String url = urlAt(db, "127.0.0.1:1/test?password=url-pw-4242");
        Path bad = dir.resolve("bad.properties");
        Files.writeString(bad, String.join("\n", "txbox.jdbc.url=" + url,
                "txbox.jdbc.password=cfg-pw-4343", "txbox.jdbc.connection-timeout=1s"));
        Result r = TxboxCliTest.run(Map.of(), "status", "--config", bad.toString());
        assertThat(r.code()).isEqualTo(TxboxCli.FAILED);
        assertThat(r.err()).contains("cannot connect to the database at " + urlAt(db, "127.0.0.1:1/test?password=****"))
                .doesNotContain("url-pw-4242", "cfg-pw-4343");
    }
}
