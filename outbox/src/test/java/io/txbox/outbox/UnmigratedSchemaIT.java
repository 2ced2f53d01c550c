package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/** An outbox used on a schema that was never migrated says to migrate it, on both databases. */
class UnmigratedSchemaIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    static OutboxMessage message(String original) {
        return OutboxMessage.builder(StepKey.of(original, "ship"), "shipping").payload(new byte[] {1}).build();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_schemaWithoutTxboxTables_saysToRunTheMigrations(TestDatabase db) throws Exception {
        String schema = db.newSchema("unmigrated");
        Outbox outbox = Outbox.builder().tables(TxboxTables.inSchema(schema)).build();
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            assertThatThrownBy(() -> outbox.send(tx, message("o1")))
                    .isInstanceOf(TxboxException.class)
                    .hasMessage("outbox send of o1:ship failed: schema " + schema
                            + " has no txbox tables: run TxboxMigrations.migrate (or `txbox-relay migrate`) first");
            tx.rollback();
            assertThatThrownBy(() -> outbox.sendAll(tx, List.of(message("o2"), message("o3"))))
                    .isInstanceOf(TxboxException.class)
                    .hasMessageEndingWith("schema " + schema + " has no txbox tables: run TxboxMigrations.migrate"
                            + " (or `txbox-relay migrate`) first")
                    .hasMessageNotContaining("exist");
            tx.rollback();
        }
    }
}
