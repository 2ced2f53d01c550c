package io.txbox.inbox;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * An inbox used on a schema that was never migrated says to migrate it, on both databases.
 */
class UnmigratedSchemaIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    static String instruction(String schema) {
        return "schema " + schema + " has no txbox tables: run TxboxMigrations.migrate (or `txbox-relay migrate`) first";
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void receiveAndProcess_schemaWithoutTxboxTables_sayToRunTheMigrations(TestDatabase db) throws Exception {
        String schema = db.newSchema("unmigrated");
        Inbox inbox = Inbox.builder("payments").tables(TxboxTables.inSchema(schema)).build();
        InboundMessage m = InboundMessage.of("pay-1", "charge 10".getBytes(UTF_8));
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            assertThatThrownBy(() -> inbox.receive(tx, m))
                    .isInstanceOf(TxboxException.class)
                    .hasMessageEndingWith(instruction(schema))
                    .hasMessageNotContaining("exist");
            tx.rollback();
        }
        assertThatThrownBy(() -> inbox.process(db.dataSource(), m, (tx, in) -> null))
                .isInstanceOf(TxboxException.class)
                .hasMessageEndingWith(instruction(schema))
                .hasMessageNotContaining("exist");
    }
}
