package io.txbox.faults;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.inbox.Handler;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bad-input corpus through the inbox and outbox APIs: every bad key is refused with an
 * {@link InvalidInputException} that says what is wrong and shows the value escaped and
 * shortened; nothing is written; a normal call right after works. The inbox cases run on
 * PostgreSQL and MariaDB.
 */
class BadInputApiIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    /** The migrated tables of each database, and a table of effects (one row per handler run). */
    private static final Map<TestDatabase, TxboxTables> MIGRATED = new ConcurrentHashMap<>();

    static TxboxTables tables(TestDatabase db) {
        return MIGRATED.computeIfAbsent(db, d -> {
            TxboxTables t = TxboxTables.inSchema(d.schema());
            TxboxMigrations.migrate(d.dataSource(), t);
            exec(d, "CREATE TABLE api_effects (consumer varchar(255) NOT NULL, message_key varchar(255) NOT NULL)");
            return t;
        });
    }

    static Handler recorder(String consumer) {
        return (tx, m) -> {
            try (PreparedStatement ps = tx.prepareStatement("INSERT INTO api_effects VALUES (?, ?)")) {
                ps.setString(1, consumer);
                ps.setString(2, m.key());
                ps.executeUpdate();
            }
            return null;
        };
    }

    static long queryLong(TestDatabase db, String sql, String... args) {
        try (Connection c = db.dataSource().getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setString(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    static void exec(TestDatabase db, String sql) {
        try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    static String inbox(TestDatabase db) {
        return db.qualified(db.schema(), tables(db).inboxTable());
    }

    static Stream<Arguments> badKeys() {
        return Stream.of(
                Arguments.of("missing", null, "is missing"),
                Arguments.of("empty", "", "is empty"),
                Arguments.of("10 KB", "k".repeat(10 * 1024), "10240 bytes of UTF-8"),
                Arguments.of("lone surrogate (not UTF-8)", "order-\uD83C-1", "not valid Unicode"),
                Arguments.of("control character", "order\u0007-1", "control character U+0007"),
                Arguments.of("NUL", "order\u0000-1", "control character U+0000"));
    }

    /** Each bad key on each database. */
    static Stream<Arguments> badKeysOnEachDatabase() {
        return DBS.all().stream().flatMap(db -> badKeys().map(a -> Arguments.of(
                Named.of(db.kind().toString(), db), a.get()[0], a.get()[1], a.get()[2])));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("badKeysOnEachDatabase")
    void inbox_badKey_refusedNamingTheProblemAndNothingWritten(TestDatabase db, String what, String key,
            String problem) {
        Inbox inbox = Inbox.builder("api-corpus").tables(tables(db)).build();
        InvalidInputException e = catchThrowableOfType(InvalidInputException.class,
                () -> inbox.process(db.dataSource(), InboundMessage.of(key, "x".getBytes(UTF_8)),
                        recorder("api-corpus")));
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).contains("message key").contains(problem).doesNotContain("\u0000").doesNotContain("\u0007");
        assertThat(e.getMessage().length()).isLessThan(400);
        assertThat(queryLong(db, "SELECT count(*) FROM " + inbox(db) + " WHERE consumer = 'api-corpus'")).isZero();
        String normal = "normal-after-" + what.replace(' ', '-');
        assertThat(inbox.process(db.dataSource(), InboundMessage.of(normal, "x".getBytes(UTF_8)),
                recorder("api-corpus")).status()).isEqualTo(Outcome.Status.PROCESSED);
        exec(db, "DELETE FROM " + inbox(db) + " WHERE consumer = 'api-corpus'");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badKeys")
    void outbox_badOriginalKey_refusedNamingTheProblem(String what, String key, String problem) {
        InvalidInputException e = catchThrowableOfType(InvalidInputException.class, () -> StepKey.of(key, "pay"));
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).contains("original key").contains(problem);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void inbox_emojiKey_isAcceptedAndAppliedOnce(TestDatabase db) {
        String key = "order-\uD83C\uDF89-\u00e9-\u4e2d-1";
        InboundMessage m = InboundMessage.of(key, "x".getBytes(UTF_8));
        Inbox emoji = Inbox.builder("api-emoji").tables(tables(db)).build();
        assertThat(emoji.process(db.dataSource(), m, recorder("api-emoji")).status())
                .isEqualTo(Outcome.Status.PROCESSED);
        assertThat(emoji.process(db.dataSource(), m, recorder("api-emoji")).status())
                .isEqualTo(Outcome.Status.DUPLICATE);
        assertThat(queryLong(db, "SELECT count(*) FROM api_effects WHERE consumer = 'api-emoji' AND message_key = ?",
                key)).isEqualTo(1);
        assertThat(queryLong(db, "SELECT count(*) FROM " + inbox(db) + " WHERE message_key = ?", key)).isEqualTo(1);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void inbox_keyReusedWithDifferentPayload_reportsKeyReusedAndRunsNothing(TestDatabase db) {
        Inbox reuse = Inbox.builder("api-reuse").tables(tables(db)).build();
        assertThat(reuse.process(db.dataSource(), InboundMessage.of("r-1", "first".getBytes(UTF_8)),
                recorder("api-reuse")).status()).isEqualTo(Outcome.Status.PROCESSED);
        Outcome second = reuse.process(db.dataSource(), InboundMessage.of("r-1", "second".getBytes(UTF_8)),
                recorder("api-reuse"));
        assertThat(second.status()).isEqualTo(Outcome.Status.KEY_REUSED);
        assertThat(second.reason()).contains("r-1").contains("different payload").doesNotContain("second");
        assertThat(queryLong(db, "SELECT count(*) FROM api_effects WHERE consumer = 'api-reuse'")).isEqualTo(1);
    }

    @Test
    void outbox_20MbPayload_refusedAndNothingWritten() throws Exception {
        TestDatabase pg = DBS.postgres();
        TxboxTables tables = tables(pg);
        Outbox outbox = Outbox.builder().tables(tables).build();
        try (Connection c = pg.dataSource().getConnection()) {
            c.setAutoCommit(false);
            InvalidInputException e = catchThrowableOfType(InvalidInputException.class, () -> outbox.send(c,
                    OutboxMessage.builder(StepKey.of("big", "s"), "d").payload(new byte[20 * 1024 * 1024]).build()));
            assertThat(e).isNotNull();
            assertThat(e.getMessage()).contains("big:s");
            c.commit();
        }
        assertThat(queryLong(pg, "SELECT count(*) FROM " + tables.qualified(tables.outboxTable()))).isZero();
    }
}
