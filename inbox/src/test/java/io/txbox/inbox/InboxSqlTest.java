package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import org.junit.jupiter.api.Test;

class InboxSqlTest {
    private final InboxSql sql = new InboxSql(new TxboxTables("shop", "tx_"), 5, 30_000_000L, 1000);

    @Test
    void statements_renderAgainstConfiguredSchemaAndPrefix() {
        for (InboxSql.Stmt s : new InboxSql.Stmt[] {sql.receive, sql.receiveAll, sql.storeResult, sql.read, sql.recordFailure,
                sql.claim, sql.complete, sql.fail, sql.release, sql.resetDead, sql.listDead, sql.purge}) {
            assertThat(s.sql()).contains("\"shop\".\"tx_inbox\"").doesNotContain("txbox_inbox");
        }
    }

    @Test
    void receive_isOneInsertWithoutSelect() {
        assertThat(sql.receive.sql()).startsWith("insert into").contains("on conflict (\"consumer\", \"message_key\")")
                .contains("returning").doesNotContain("select");
        assertThat(sql.receive.params()).containsExactly("consumer", "key", "fingerprint");
    }

    @Test
    void receiveAll_isOneInsertOfThreeArraysWhateverTheCount() {
        assertThat(sql.receiveAll.sql()).startsWith("insert into").contains("from unnest(")
                .contains("on conflict (\"consumer\", \"message_key\")").contains("returning");
        assertThat(sql.receiveAll.params()).containsExactly("consumers", "keys", "fingerprints");
        assertThat(sql.receiveAll.sql().substring(sql.receiveAll.sql().indexOf(" on conflict ")))
                .as("the same answer to an existing entry as receive's")
                .isEqualTo(sql.receive.sql().substring(sql.receive.sql().indexOf(" on conflict "))
                        .replace("returning \"shop\".\"tx_inbox\".\"attempts\"", "returning \"shop\".\"tx_inbox\".\"consumer\", "
                                + "\"shop\".\"tx_inbox\".\"message_key\", \"shop\".\"tx_inbox\".\"attempts\""));
    }

    @Test
    void settings_areInlinedAtBuildTime() {
        assertThat(sql.claim.sql()).contains("now() + 30000000 * interval '1 microsecond'").contains(">= 5");
        assertThat(sql.purge.sql()).contains("fetch next 1000 rows only for update skip locked");
    }
}
