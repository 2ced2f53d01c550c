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
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bad-input corpus through the inbox and outbox APIs: every bad key is refused with an
 * {@link InvalidInputException} that says what is wrong and shows the value escaped and
 * shortened; nothing is written; a normal call right after works.
 */
class BadInputApiIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    static TxboxTables tables;
    static Effects effects;
    static Inbox inbox;
    static Outbox outbox;

    @BeforeAll
    static void setUp() {
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        effects = new Effects(PG.dataSource());
        inbox = Inbox.builder("api-corpus").tables(tables).build();
        outbox = Outbox.builder().tables(tables).build();
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

    @ParameterizedTest(name = "{0}")
    @MethodSource("badKeys")
    void inbox_badKey_refusedNamingTheProblemAndNothingWritten(String what, String key, String problem) {
        InvalidInputException e = catchThrowableOfType(InvalidInputException.class,
                () -> inbox.process(PG.dataSource(), InboundMessage.of(key, "x".getBytes(UTF_8)),
                        Effects.recorder("api-corpus")));
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).contains("message key").contains(problem).doesNotContain("\u0000").doesNotContain("\u0007");
        assertThat(e.getMessage().length()).isLessThan(400);
        assertThat(effects.queryLong("SELECT count(*) FROM " + tables.qualified(tables.inboxTable())
                + " WHERE consumer = 'api-corpus'")).isZero();
        String normal = "normal-after-" + what.replace(' ', '-');
        assertThat(inbox.process(PG.dataSource(), InboundMessage.of(normal, "x".getBytes(UTF_8)),
                Effects.recorder("api-corpus")).status()).isEqualTo(Outcome.Status.PROCESSED);
        effects.exec("DELETE FROM " + tables.qualified(tables.inboxTable()) + " WHERE consumer = 'api-corpus'");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badKeys")
    void outbox_badOriginalKey_refusedNamingTheProblem(String what, String key, String problem) {
        InvalidInputException e = catchThrowableOfType(InvalidInputException.class, () -> StepKey.of(key, "pay"));
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).contains("original key").contains(problem);
    }

    @Test
    void inbox_emojiKey_isAcceptedAndAppliedOnce() {
        String key = "order-\uD83C\uDF89-\u00e9-\u4e2d-1";
        InboundMessage m = InboundMessage.of(key, "x".getBytes(UTF_8));
        Inbox emoji = Inbox.builder("api-emoji").tables(tables).build();
        assertThat(emoji.process(PG.dataSource(), m, Effects.recorder("api-emoji")).status())
                .isEqualTo(Outcome.Status.PROCESSED);
        assertThat(emoji.process(PG.dataSource(), m, Effects.recorder("api-emoji")).status())
                .isEqualTo(Outcome.Status.DUPLICATE);
        assertThat(effects.count("api-emoji", key)).isEqualTo(1);
    }

    @Test
    void inbox_keyReusedWithDifferentPayload_reportsKeyReusedAndRunsNothing() {
        Inbox reuse = Inbox.builder("api-reuse").tables(tables).build();
        assertThat(reuse.process(PG.dataSource(), InboundMessage.of("r-1", "first".getBytes(UTF_8)),
                Effects.recorder("api-reuse")).status()).isEqualTo(Outcome.Status.PROCESSED);
        Outcome second = reuse.process(PG.dataSource(), InboundMessage.of("r-1", "second".getBytes(UTF_8)),
                Effects.recorder("api-reuse"));
        assertThat(second.status()).isEqualTo(Outcome.Status.KEY_REUSED);
        assertThat(second.reason()).contains("r-1").contains("different payload").doesNotContain("second");
        assertThat(effects.count("api-reuse", "r-1")).isEqualTo(1);
    }

    @Test
    void outbox_20MbPayload_refusedAndNothingWritten() throws Exception {
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            InvalidInputException e = catchThrowableOfType(InvalidInputException.class, () -> outbox.send(c,
                    OutboxMessage.builder(StepKey.of("big", "s"), "d").payload(new byte[20 * 1024 * 1024]).build()));
            assertThat(e).isNotNull();
            assertThat(e.getMessage()).contains("big:s");
            c.commit();
        }
        assertThat(effects.queryLong("SELECT count(*) FROM " + tables.qualified(tables.outboxTable()))).isZero();
    }
}
