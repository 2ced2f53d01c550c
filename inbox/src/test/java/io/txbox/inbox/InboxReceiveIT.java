package io.txbox.inbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import io.txbox.InvalidInputException;
import io.txbox.TxboxException;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.List;
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

    /**
     * Keys in every state an entry can be in for receive: new, completed with a result, failed
     * once (may run again), dead, leased by a two-phase worker; and a new key named twice.
     */
    private List<InboundMessage> keysInEveryState(Inbox in, String prefix) throws SQLException {
        InboundMessage fresh = InboundMessage.of(prefix + "-new", "a".getBytes(UTF_8));
        InboundMessage done = InboundMessage.of(prefix + "-done", "b".getBytes(UTF_8));
        InboundMessage failed = InboundMessage.of(prefix + "-failed", "c".getBytes(UTF_8));
        InboundMessage dead = InboundMessage.of(prefix + "-dead", "d".getBytes(UTF_8));
        InboundMessage leased = InboundMessage.of(prefix + "-leased", "e".getBytes(UTF_8));
        receiveAndCommit(in, done, "done's result".getBytes(UTF_8));
        in.recordFailure(db.dataSource(), failed, new IllegalStateException("once"));
        in.recordFailure(db.dataSource(), dead, new IllegalStateException("once"));
        in.recordFailure(db.dataSource(), dead, new IllegalStateException("twice"));
        in.claim(db.dataSource(), leased);
        return List.of(fresh, done, failed, dead, leased, fresh);
    }

    /** The receipts of {@code call} in a transaction that is then rolled back. */
    private List<Receipt> rolledBack(ReceiveCall call) throws SQLException {
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            try {
                return call.receive(c);
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
    }

    @FunctionalInterface
    private interface ReceiveCall {
        List<Receipt> receive(Connection c) throws SQLException;
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receiveAll_keysInEveryState_sameReceiptsAsReceivingOneAfterTheOther(TestDatabase db) throws SQLException {
        use(db);
        Inbox in = Inbox.builder("orders-all").tables(rows.tables).maxAttempts(2).build();
        List<InboundMessage> messages = keysInEveryState(in, "all");

        List<Receipt> together = rolledBack(c -> in.receiveAll(c, messages));
        List<Receipt> oneByOne = rolledBack(c -> messages.stream().map(m -> in.receive(c, m)).toList());

        assertThat(together).isEqualTo(oneByOne);
        assertThat(together).extracting(Receipt::status).containsExactly(Receipt.Status.FIRST,
                Receipt.Status.DUPLICATE, Receipt.Status.FIRST, Receipt.Status.DEAD, Receipt.Status.IN_FLIGHT,
                Receipt.Status.DUPLICATE);
        assertThat(together.get(1).result()).asString(UTF_8).isEqualTo("done's result");
        assertThat(together.get(2).attempts()).as("the failed entry's second attempt").isEqualTo(2);
        assertThat(together.get(5).result()).as("the repeated key: nothing stored yet").isNull();
        assertThat(rows.count("consumer = 'orders-all' and message_key = 'all-new'")).as("rolled back").isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receiveAll_firstOnesStoredLastToFirst_laterDeliveriesGetTheirResults(TestDatabase db) throws SQLException {
        use(db);
        Inbox in = Inbox.builder("orders-all-commit").tables(rows.tables).maxAttempts(2).build();
        List<InboundMessage> messages = keysInEveryState(in, "commit");
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            List<Receipt> receipts = in.receiveAll(c, messages);
            // last to first: on MariaDB a result stored releases the savepoints of the receipts after it
            for (int i = receipts.size() - 1; i >= 0; i--) {
                if (receipts.get(i).isFirst()) {
                    in.storeResult(c, messages.get(i), ("result " + i).getBytes(UTF_8));
                }
            }
            c.commit();
            c.setAutoCommit(true);
        }

        assertThat(rolledBack(c -> in.receiveAll(c, messages))).extracting(Receipt::status, r -> r.result() == null
                        ? null : new String(r.result(), UTF_8))
                .containsExactly(tuple(Receipt.Status.DUPLICATE, "result 0"),
                        tuple(Receipt.Status.DUPLICATE, "done's result"), tuple(Receipt.Status.DUPLICATE, "result 2"),
                        tuple(Receipt.Status.DEAD, null), tuple(Receipt.Status.IN_FLIGHT, null),
                        tuple(Receipt.Status.DUPLICATE, "result 0"));
        assertThat(rows.status("orders-all-commit", "commit-failed")).isEqualTo("COMPLETED");
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receiveAll_keyReusedAmongThem_throwsKeyReuseAndTheRollbackLeavesNoEntry(TestDatabase db)
            throws SQLException {
        use(db);
        receiveAndCommit(inbox, InboundMessage.of("all-reuse", "pay 10".getBytes(UTF_8)), null);
        List<InboundMessage> messages = List.of(InboundMessage.of("all-reuse-before", new byte[] {1}),
                InboundMessage.of("all-reuse", "pay 99".getBytes(UTF_8)),
                InboundMessage.of("all-reuse-after", new byte[] {2}));

        assertThatThrownBy(() -> rolledBack(c -> inbox.receiveAll(c, messages)))
                .isInstanceOf(KeyReuseException.class).hasMessageContaining("\"all-reuse\"");
        assertThat(rows.count("message_key like 'all-reuse-%'")).isZero();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receiveAll_sameKeyTwoTenants_twoFirstEntries(TestDatabase db) throws SQLException {
        use(db);
        List<InboundMessage> messages = List.of(
                InboundMessage.builder("all-tenant", new byte[] {1}).tenant("eu").build(),
                InboundMessage.builder("all-tenant", new byte[] {1}).tenant("us").build());
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThat(inbox.receiveAll(c, messages)).allMatch(Receipt::isFirst);
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(rows.count("message_key = 'all-tenant'")).isEqualTo(2);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receiveAll_autoCommitConnectionOrBadKey_refusedAndNothingWritten(TestDatabase db) throws SQLException {
        use(db);
        try (Connection c = db.dataSource().getConnection()) {
            assertThatThrownBy(() -> inbox.receiveAll(c, List.of(InboundMessage.of("all-auto", new byte[0]),
                    InboundMessage.of("all-auto-2", new byte[0])))).isInstanceOf(IllegalStateException.class);
            c.setAutoCommit(false);
            assertThatThrownBy(() -> inbox.receiveAll(c, List.of(InboundMessage.of("all-bad-ok", new byte[0]),
                    InboundMessage.of("a\nb", new byte[0])))).isInstanceOf(InvalidInputException.class);
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(rows.count("message_key like 'all-auto%' or message_key like 'all-bad%'")).isZero();
    }
}
