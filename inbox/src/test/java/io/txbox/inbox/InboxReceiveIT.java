package io.txbox.inbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.InvalidInputException;
import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Atomic mode through {@link Inbox#receive}: the entry lives and dies with the caller's transaction. */
class InboxReceiveIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    static TxboxTables tables;
    static Inbox inbox;
    static Rows rows;

    @BeforeAll
    static void migrate() throws SQLException {
        tables = TxboxTables.inSchema(PG.schema());
        TxboxMigrations.migrate(PG.dataSource(), tables);
        inbox = Inbox.builder("orders").tables(tables).maxPayloadBytes(1000).build();
        rows = new Rows(PG.dataSource(), tables);
        rows.execute("create table " + PG.schema() + ".business (id text primary key)");
    }

    private static Receipt receiveAndCommit(Inbox in, InboundMessage m, byte[] result) throws SQLException {
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            Receipt r = in.receive(c, m);
            if (r.isFirst() && result != null) {
                in.storeResult(c, m, result);
            }
            c.commit();
            c.setAutoCommit(true);
            return r;
        }
    }

    @Test
    void receive_sameKeyTwice_reportsDuplicateWithStoredResult() throws SQLException {
        InboundMessage m = InboundMessage.of("k-dup", "pay 10".getBytes(UTF_8));
        Receipt first = receiveAndCommit(inbox, m, "receipt-1".getBytes(UTF_8));
        Receipt second = receiveAndCommit(inbox, m, null);

        assertThat(first.status()).isEqualTo(Receipt.Status.FIRST);
        assertThat(first.attempts()).isEqualTo(1);
        assertThat(second.status()).isEqualTo(Receipt.Status.DUPLICATE);
        assertThat(second.result()).asString(UTF_8).isEqualTo("receipt-1");
        assertThat(rows.status("orders", "k-dup")).isEqualTo("COMPLETED");
    }

    @Test
    void receive_duplicateWithoutStoredResult_reportsDuplicateWithNullResult() throws SQLException {
        InboundMessage m = InboundMessage.of("k-noresult", new byte[] {1});
        receiveAndCommit(inbox, m, null);
        Receipt again = receiveAndCommit(inbox, m, null);
        assertThat(again.status()).isEqualTo(Receipt.Status.DUPLICATE);
        assertThat(again.result()).isNull();
    }

    @Test
    void receive_rolledBack_leavesNoEntrySoNextDeliveryIsFirst() throws SQLException {
        InboundMessage m = InboundMessage.of("k-rollback", new byte[] {1});
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThat(inbox.receive(c, m).isFirst()).isTrue();
            try (Statement s = c.createStatement()) {
                s.execute("insert into business values ('k-rollback')");
            }
            c.rollback();
            c.setAutoCommit(true);
        }
        assertThat(rows.count("message_key = 'k-rollback'")).isZero();
        assertThat(rows.queryLong("select count(*) from " + PG.schema() + ".business")).isZero();
        assertThat(receiveAndCommit(inbox, m, null).isFirst()).isTrue();
    }

    @Test
    void receive_sameKeyDifferentPayload_throwsKeyReuseNamingConsumerAndKeyNotPayload() throws SQLException {
        receiveAndCommit(inbox, InboundMessage.of("k-reuse", "pay 10".getBytes(UTF_8)), "ok".getBytes(UTF_8));

        assertThatThrownBy(() -> receiveAndCommit(inbox, InboundMessage.of("k-reuse", "pay 99".getBytes(UTF_8)), null))
                .isInstanceOf(KeyReuseException.class)
                .hasMessageContaining("\"orders\"").hasMessageContaining("\"k-reuse\"")
                .hasMessageNotContaining("pay 99").hasMessageNotContaining("pay 10");
        assertThat(rows.string("select convert_from(result, 'UTF8') from " + rows.inbox()
                + " where message_key = 'k-reuse'")).isEqualTo("ok");
    }

    @Test
    void receive_customCanonicalFingerprint_treatsEquivalentPayloadsAsSame() throws SQLException {
        Inbox lenient = Inbox.builder("canonical").tables(tables)
                .fingerprint(Fingerprint.sha256Of(m -> new String(m.payload(), UTF_8).strip().getBytes(UTF_8)))
                .build();
        receiveAndCommit(lenient, InboundMessage.of("k-canon", "{\"a\":1}".getBytes(UTF_8)), null);
        Receipt again = receiveAndCommit(lenient, InboundMessage.of("k-canon", "  {\"a\":1}\n".getBytes(UTF_8)), null);
        assertThat(again.status()).isEqualTo(Receipt.Status.DUPLICATE);
    }

    @Test
    void receive_sameKeyTwoConsumers_makesTwoEntries() throws SQLException {
        Inbox billing = Inbox.builder("billing").tables(tables).build();
        InboundMessage m = InboundMessage.of("k-scope", new byte[] {7});
        assertThat(receiveAndCommit(inbox, m, null).isFirst()).isTrue();
        assertThat(receiveAndCommit(billing, m, null).isFirst()).isTrue();
        assertThat(rows.count("message_key = 'k-scope'")).isEqualTo(2);
    }

    @Test
    void receive_sameKeyTwoTenants_makesTwoEntries() throws SQLException {
        InboundMessage acme = InboundMessage.builder("k-tenant", new byte[] {7}).tenant("acme").build();
        InboundMessage globex = InboundMessage.builder("k-tenant", new byte[] {8}).tenant("globex").build();
        assertThat(receiveAndCommit(inbox, acme, null).isFirst()).isTrue();
        assertThat(receiveAndCommit(inbox, globex, null).isFirst()).isTrue();
        assertThat(receiveAndCommit(inbox, acme, null).status()).isEqualTo(Receipt.Status.DUPLICATE);
        assertThat(rows.count("message_key = 'k-tenant'")).isEqualTo(2);
    }

    @Test
    void receive_autoCommitConnection_isRefusedAndWritesNothing() throws SQLException {
        try (Connection c = PG.dataSource().getConnection()) {
            assertThatThrownBy(() -> inbox.receive(c, InboundMessage.of("k-auto", new byte[0])))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("auto-commit")
                    .hasMessageContaining("setAutoCommit(false)");
        }
        assertThat(rows.count("message_key = 'k-auto'")).isZero();
    }

    @Test
    void storeResult_autoCommitConnection_isRefusedNamingTheFixAndChangesNothing() throws SQLException {
        InboundMessage m = InboundMessage.of("k-store-auto", new byte[] {1});
        receiveAndCommit(inbox, m, "kept".getBytes(UTF_8));
        try (Connection c = PG.dataSource().getConnection()) {
            assertThatThrownBy(() -> inbox.storeResult(c, m, "replaced".getBytes(UTF_8)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("inbox store result")
                    .hasMessageContaining("auto-commit mode").hasMessageContaining("setAutoCommit(false)");
        }
        assertThat(rows.string("select convert_from(result, 'UTF8') from " + rows.inbox()
                + " where message_key = 'k-store-auto'")).isEqualTo("kept");
    }

    @Test
    void storeResult_withoutReceiveInTransaction_fails() throws SQLException {
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> inbox.storeResult(c, InboundMessage.of("k-never", new byte[0]), new byte[1]))
                    .hasMessageContaining("call receive in the same transaction first");
            c.rollback();
            c.setAutoCommit(true);
        }
    }

    @Test
    void storeResult_laterTransactionOnCompletedEntry_isRefusedAndKeepsStoredResult() throws SQLException {
        InboundMessage m = InboundMessage.of("k-store-later", new byte[] {1});
        receiveAndCommit(inbox, m, "first".getBytes(UTF_8));
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> inbox.storeResult(c, m, "later".getBytes(UTF_8)))
                    .isInstanceOf(TxboxException.class).hasMessageContaining("did not report FIRST")
                    .hasMessageContaining("call receive in the same transaction first");
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(storedResult("k-store-later")).isEqualTo("first");
        assertThat(receiveAndCommit(inbox, m, null).result()).asString(UTF_8).isEqualTo("first");
    }

    @Test
    void storeResult_afterReceiveSaidDuplicate_isRefusedAndKeepsStoredResult() throws SQLException {
        InboundMessage m = InboundMessage.of("k-store-dup", new byte[] {1});
        receiveAndCommit(inbox, m, "first".getBytes(UTF_8));
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThat(inbox.receive(c, m).status()).isEqualTo(Receipt.Status.DUPLICATE);
            assertThatThrownBy(() -> inbox.storeResult(c, m, "duplicate".getBytes(UTF_8)))
                    .isInstanceOf(TxboxException.class).hasMessageContaining("did not report FIRST");
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(storedResult("k-store-dup")).isEqualTo("first");
    }

    @Test
    void storeResult_receivedUnderSavepointOfThisTransaction_isStored() throws SQLException {
        InboundMessage m = InboundMessage.of("k-store-savepoint", new byte[] {1});
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            Savepoint sp = c.setSavepoint();
            assertThat(inbox.receive(c, m).isFirst()).isTrue();
            c.releaseSavepoint(sp);
            inbox.storeResult(c, m, "stored".getBytes(UTF_8));
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(storedResult("k-store-savepoint")).isEqualTo("stored");
    }

    private static String storedResult(String key) {
        return rows.string("select convert_from(result, 'UTF8') from " + rows.inbox() + " where message_key = ?", key);
    }

    @Test
    void receive_badKeys_areRefusedWithClearErrorsAndNothingWritten() throws SQLException {
        long before = rows.count("true");
        try (Connection c = PG.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> inbox.receive(c, InboundMessage.of(null, new byte[0])))
                    .isInstanceOf(InvalidInputException.class).hasMessageContaining("message key is missing");
            assertThatThrownBy(() -> inbox.receive(c, InboundMessage.of("", new byte[0])))
                    .isInstanceOf(InvalidInputException.class).hasMessageContaining("message key is empty");
            assertThatThrownBy(() -> inbox.receive(c, InboundMessage.of("é".repeat(128), new byte[0])))
                    .isInstanceOf(InvalidInputException.class).hasMessageContaining("256 bytes of UTF-8");
            assertThatThrownBy(() -> inbox.receive(c, InboundMessage.of("a\nb", new byte[0])))
                    .isInstanceOf(InvalidInputException.class).hasMessageContaining("control character U+000A");
            assertThatThrownBy(() -> inbox.receive(c, InboundMessage.of("bad\uD800", new byte[0])))
                    .isInstanceOf(InvalidInputException.class).hasMessageContaining("not valid Unicode");
            assertThatThrownBy(() -> InboundMessage.keyFromUtf8(new byte[] {(byte) 0xC3, (byte) 0x28}))
                    .isInstanceOf(InvalidInputException.class).hasMessageContaining("not valid UTF-8");
            assertThatThrownBy(() -> inbox.receive(c, InboundMessage.of("big", new byte[1001])))
                    .isInstanceOf(InvalidInputException.class)
                    .hasMessageContaining("1001 bytes, more than maxPayloadBytes 1000");
            assertThatThrownBy(() -> inbox.receive(c,
                            InboundMessage.builder("k", new byte[0]).tenant("t".repeat(250)).build()))
                    .isInstanceOf(InvalidInputException.class).hasMessageContaining("tenant");
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(rows.count("true")).isEqualTo(before);
    }

    @Test
    void receive_keyOf255Bytes_isAccepted() throws SQLException {
        String key = "é".repeat(127) + "x"; // 255 bytes of UTF-8
        assertThat(receiveAndCommit(inbox, InboundMessage.of(key, new byte[0]), null).isFirst()).isTrue();
    }
}
