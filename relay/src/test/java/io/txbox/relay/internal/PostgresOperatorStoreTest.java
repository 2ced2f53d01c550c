package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.relay.DeadLetters;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The operators' statements as rendered when built, read from the store's fields. */
class PostgresOperatorStoreTest {
    static final Map<String, String> SQL =
            PostgresRelayStoreTest.rendered(new PostgresOperatorStore(new TxboxTables("orders", "tx_")));

    @Test
    void statements_renderedOnceWithSchemaAndPrefix_neverTheGeneratedNames() {
        assertThat(SQL).containsOnlyKeys("statusOutbox", "statusDead", "statusMembers", "statusLanes", "list",
                "retryOne", "retryFrom", "purge", "countOlder", "count");
        SQL.forEach((name, sql) ->
                assertThat(sql).as(name).contains("\"orders\".\"tx_").doesNotContain("txbox_").doesNotContain("\"txbox\""));
    }

    @Test
    void retry_keepsTheIdInTheOutbox_andDropsRowsPendingAgain() {
        assertThat(SQL.get("retryFrom")).contains("\"orders\".\"tx_outbox_dead\"").contains("OVERRIDING SYSTEM VALUE")
                .contains("ON CONFLICT DO NOTHING").contains("LIMIT " + DeadLetters.BATCH + " FOR UPDATE SKIP LOCKED");
    }

    @Test
    void purge_deletesOneBatchOfUnlockedRows() {
        assertThat(SQL.get("purge")).contains("delete from \"orders\".\"tx_outbox_dead\"")
                .contains("fetch next " + DeadLetters.BATCH + " rows only").contains("skip locked");
    }
}
