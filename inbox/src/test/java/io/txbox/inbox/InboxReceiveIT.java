package io.txbox.inbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.InvalidInputException;
import io.txbox.TxboxException;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Atomic mode through {@link Inbox#receive}: the entry lives and dies with the caller's transaction. */
class InboxReceiveIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    private TestDatabase db;
    private Rows rows;
    private Inbox inbox;

    private void use(TestDatabase db) {
        this.db = db;
        rows = Rows.of(db);
        inbox = Inbox.builder("orders").tables(rows.tables).maxPayloadBytes(1000).build();
        rows.execute("create table if not exists " + rows.table("business") + " (id " + rows.text() + " primary key)");
    }

    private Receipt receiveAndCommit(Inbox in, InboundMessage m, byte[] result) throws SQLException {
        try (Connection c = db.dataSource().getConnection()) {
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

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_sameKeyTwice_reportsDuplicateWithStoredResult(TestDatabase db) throws SQLException {
        use(db);
        InboundMessage m = InboundMessage.of("k-dup", "pay 10".getBytes(UTF_8));
        Receipt first = receiveAndCommit(inbox, m, "receipt-1".getBytes(UTF_8));
        Receipt second = receiveAndCommit(inbox, m, null);

        assertThat(first.status()).isEqualTo(Receipt.Status.FIRST);
        assertThat(first.attempts()).isEqualTo(1);
        assertThat(second.status()).isEqualTo(Receipt.Status.DUPLICATE);
        assertThat(second.result()).asString(UTF_8).isEqualTo("receipt-1");
        assertThat(rows.status("orders", "k-dup")).isEqualTo("COMPLETED");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_duplicateWithoutStoredResult_reportsDuplicateWithNullResult(TestDatabase db) throws SQLException {
        use(db);
        InboundMessage m = InboundMessage.of("k-noresult", new byte[] {1});
        receiveAndCommit(inbox, m, null);
        Receipt again = receiveAndCommit(inbox, m, null);
        assertThat(again.status()).isEqualTo(Receipt.Status.DUPLICATE);
        assertThat(again.result()).isNull();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_rolledBack_leavesNoEntrySoNextDeliveryIsFirst(TestDatabase db) throws SQLException {
        use(db);
        InboundMessage m = InboundMessage.of("k-rollback", new byte[] {1});
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThat(inbox.receive(c, m).isFirst()).isTrue();
            try (Statement s = c.createStatement()) {
                s.execute("insert into " + rows.table("business") + " values ('k-rollback')");
            }
            c.rollback();
            c.setAutoCommit(true);
        }
        assertThat(rows.count("message_key = 'k-rollback'")).isZero();
        assertThat(rows.queryLong("select count(*) from " + rows.table("business") + "")).isZero();
        assertThat(receiveAndCommit(inbox, m, null).isFirst()).isTrue();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_sameKeyDifferentPayload_throwsKeyReuseNamingConsumerAndKeyNotPayload(TestDatabase db) throws SQLException {
        use(db);
        receiveAndCommit(inbox, InboundMessage.of("k-reuse", "pay 10".getBytes(UTF_8)), "ok".getBytes(UTF_8));

        assertThatThrownBy(() -> receiveAndCommit(inbox, InboundMessage.of("k-reuse", "pay 99".getBytes(UTF_8)), null))
                .isInstanceOf(KeyReuseException.class)
                .hasMessageContaining("\"orders\"").hasMessageContaining("\"k-reuse\"")
                .hasMessageNotContaining("pay 99").hasMessageNotContaining("pay 10");
        assertThat(rows.string("select " + rows.utf8("result") + " from " + rows.inbox()
                + " where message_key = 'k-reuse'")).isEqualTo("ok");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_customCanonicalFingerprint_treatsEquivalentPayloadsAsSame(TestDatabase db) throws SQLException {
        use(db);
        Inbox lenient = Inbox.builder("canonical").tables(rows.tables)
                .fingerprint(Fingerprint.sha256Of(m -> new String(m.payload(), UTF_8).strip().getBytes(UTF_8)))
                .build();
        receiveAndCommit(lenient, InboundMessage.of("k-canon", "{\"a\":1}".getBytes(UTF_8)), null);
        Receipt again = receiveAndCommit(lenient, InboundMessage.of("k-canon", "  {\"a\":1}\n".getBytes(UTF_8)), null);
        assertThat(again.status()).isEqualTo(Receipt.Status.DUPLICATE);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_sameKeyTwoConsumers_makesTwoEntries(TestDatabase db) throws SQLException {
        use(db);
        Inbox billing = Inbox.builder("billing").tables(rows.tables).build();
        InboundMessage m = InboundMessage.of("k-scope", new byte[] {7});
        assertThat(receiveAndCommit(inbox, m, null).isFirst()).isTrue();
        assertThat(receiveAndCommit(billing, m, null).isFirst()).isTrue();
        assertThat(rows.count("message_key = 'k-scope'")).isEqualTo(2);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_sameKeyTwoTenants_makesTwoEntries(TestDatabase db) throws SQLException {
        use(db);
        InboundMessage acme = InboundMessage.builder("k-tenant", new byte[] {7}).tenant("acme").build();
        InboundMessage globex = InboundMessage.builder("k-tenant", new byte[] {8}).tenant("globex").build();
        assertThat(receiveAndCommit(inbox, acme, null).isFirst()).isTrue();
        assertThat(receiveAndCommit(inbox, globex, null).isFirst()).isTrue();
        assertThat(receiveAndCommit(inbox, acme, null).status()).isEqualTo(Receipt.Status.DUPLICATE);
        assertThat(rows.count("message_key = 'k-tenant'")).isEqualTo(2);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_autoCommitConnection_isRefusedAndWritesNothing(TestDatabase db) throws SQLException {
        use(db);
        try (Connection c = db.dataSource().getConnection()) {
            assertThatThrownBy(() -> inbox.receive(c, InboundMessage.of("k-auto", new byte[0])))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("auto-commit")
                    .hasMessageContaining("setAutoCommit(false)");
        }
        assertThat(rows.count("message_key = 'k-auto'")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void storeResult_autoCommitConnection_isRefusedNamingTheFixAndChangesNothing(TestDatabase db) throws SQLException {
        use(db);
        InboundMessage m = InboundMessage.of("k-store-auto", new byte[] {1});
        receiveAndCommit(inbox, m, "kept".getBytes(UTF_8));
        try (Connection c = db.dataSource().getConnection()) {
            assertThatThrownBy(() -> inbox.storeResult(c, m, "replaced".getBytes(UTF_8)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("inbox store result")
                    .hasMessageContaining("auto-commit mode").hasMessageContaining("setAutoCommit(false)");
        }
        assertThat(rows.string("select " + rows.utf8("result") + " from " + rows.inbox()
                + " where message_key = 'k-store-auto'")).isEqualTo("kept");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void storeResult_withoutReceiveInTransaction_fails(TestDatabase db) throws SQLException {
        use(db);
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> inbox.storeResult(c, InboundMessage.of("k-never", new byte[0]), new byte[1]))
                    .hasMessageContaining("call receive in the same transaction first");
            c.rollback();
            c.setAutoCommit(true);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void storeResult_laterTransactionOnCompletedEntry_isRefusedAndKeepsStoredResult(TestDatabase db) throws SQLException {
        use(db);
        InboundMessage m = InboundMessage.of("k-store-later", new byte[] {1});
        receiveAndCommit(inbox, m, "first".getBytes(UTF_8));
        try (Connection c = db.dataSource().getConnection()) {
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

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void storeResult_afterReceiveSaidDuplicate_isRefusedAndKeepsStoredResult(TestDatabase db) throws SQLException {
        use(db);
        InboundMessage m = InboundMessage.of("k-store-dup", new byte[] {1});
        receiveAndCommit(inbox, m, "first".getBytes(UTF_8));
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThat(inbox.receive(c, m).status()).isEqualTo(Receipt.Status.DUPLICATE);
            assertThatThrownBy(() -> inbox.storeResult(c, m, "duplicate".getBytes(UTF_8)))
                    .isInstanceOf(TxboxException.class).hasMessageContaining("did not report FIRST");
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(storedResult("k-store-dup")).isEqualTo("first");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void storeResult_receivedUnderSavepointOfThisTransaction_isStored(TestDatabase db) throws SQLException {
        use(db);
        InboundMessage m = InboundMessage.of("k-store-savepoint", new byte[] {1});
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            Savepoint sp = c.setSavepoint();
            assertThat(inbox.receive(c, m).isFirst()).isTrue();
            inbox.storeResult(c, m, "stored".getBytes(UTF_8));
            c.releaseSavepoint(sp);
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(storedResult("k-store-savepoint")).isEqualTo("stored");
    }

    /**
     * PostgreSQL knows the transaction by its id; MariaDB and MySQL by a savepoint that receive
     * sets, which releasing an earlier savepoint also releases: storeResult then refuses (as
     * documented), and never stores for another transaction.
     */
    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void storeResult_afterReleasingASavepointSetBeforeReceive_isStoredOnPostgresRefusedOnMariaDb(TestDatabase db)
            throws SQLException {
        use(db);
        InboundMessage m = InboundMessage.of("k-store-released", new byte[] {1});
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            Savepoint sp = c.setSavepoint();
            assertThat(inbox.receive(c, m).isFirst()).isTrue();
            c.releaseSavepoint(sp);
            if (rows.postgres()) {
                inbox.storeResult(c, m, "stored".getBytes(UTF_8));
            } else {
                assertThatThrownBy(() -> inbox.storeResult(c, m, "stored".getBytes(UTF_8)))
                        .isInstanceOf(TxboxException.class).hasMessageContaining("did not report FIRST");
            }
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(storedResult("k-store-released")).isEqualTo(rows.postgres() ? "stored" : null);
        assertThat(rows.status("orders", "k-store-released")).isEqualTo("COMPLETED");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void storeResult_laterTransactionOnTheSameConnection_isRefused(TestDatabase db) throws SQLException {
        use(db);
        InboundMessage m = InboundMessage.of("k-store-same-connection", new byte[] {1});
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            assertThat(inbox.receive(c, m).isFirst()).isTrue();
            c.commit();
            assertThatThrownBy(() -> inbox.storeResult(c, m, "later".getBytes(UTF_8)))
                    .isInstanceOf(TxboxException.class).hasMessageContaining("did not report FIRST");
            c.rollback();
        }
        assertThat(storedResult("k-store-same-connection")).isNull();
    }

    private String storedResult(String key) {
        return rows.string("select " + rows.utf8("result") + " from " + rows.inbox() + " where message_key = ?", key);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_badKeys_areRefusedWithClearErrorsAndNothingWritten(TestDatabase db) throws SQLException {
        use(db);
        long before = rows.count("1 = 1");
        try (Connection c = db.dataSource().getConnection()) {
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
        assertThat(rows.count("1 = 1")).isEqualTo(before);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receive_keyOf255Bytes_isAccepted(TestDatabase db) throws SQLException {
        use(db);
        String key = "é".repeat(127) + "x"; // 255 bytes of UTF-8
        assertThat(receiveAndCommit(inbox, InboundMessage.of(key, new byte[0]), null).isFirst()).isTrue();
    }
}
