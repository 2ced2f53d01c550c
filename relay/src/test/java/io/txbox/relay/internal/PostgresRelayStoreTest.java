package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import org.junit.jupiter.api.Test;

class PostgresRelayStoreTest {
    static final PostgresRelayStore STORE = new PostgresRelayStore(new TxboxTables("orders", "tx_"));

    @Test
    void statements_renderedWithSchemaAndPrefix_neverTheGeneratedNames() {
        for (String sql : STORE.statements()) {
            assertThat(sql).contains("\"orders\".\"tx_").doesNotContain("txbox_").doesNotContain("\"txbox\"");
        }
    }

    @Test
    void claim_locksDueRowsOfTheLanesInIdOrder_skippingLockedOnes() {
        assertThat(STORE.claimSql()).contains("\"orders\".\"tx_outbox\"").contains("order by").contains("fetch next ? rows only")
                .contains("for update").endsWith("skip locked");
    }
}
