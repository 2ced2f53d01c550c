package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import org.junit.jupiter.api.Test;

class MariaDbInboxSqlTest {
    private final MariaDbInboxSql sql = new MariaDbInboxSql(new TxboxTables("shop", "tx_"), Dialect.MARIADB, 5,
            30_000_000L, 1000);

    @Test
    void statements_renderAgainstConfiguredSchemaAndPrefix() {
        for (InboxSql.Stmt s : new InboxSql.Stmt[] {sql.receive, sql.recordFailure, sql.claim, sql.read,
                sql.receivedToken, sql.storeResult, sql.complete, sql.fail, sql.failed, sql.release, sql.resetDead,
                sql.listDead, sql.purge, sql.completedByConsumer, sql.countDead}) {
            assertThat(s.sql()).contains("`shop`.`tx_inbox`").doesNotContain("txbox_inbox").doesNotContain("\"");
        }
    }

    @Test
    void writes_areOneUpsertWithoutSelect_andTheReadBackLocks() {
        for (InboxSql.Stmt s : new InboxSql.Stmt[] {sql.receive, sql.recordFailure, sql.claim}) {
            assertThat(s.sql()).contains("insert into").contains("on duplicate key update").doesNotContain("select");
            // received_txid is decided first: every later assignment follows it
            assertThat(s.sql().substring(s.sql().indexOf("on duplicate key update")))
                    .startsWith("on duplicate key update `shop`.`tx_inbox`.`received_txid` = case when");
        }
        assertThat(sql.receive.params()).startsWith("savepoint", "consumer", "key", "fingerprint", "token");
        assertThat(sql.read.sql()).endsWith("for update");
    }

    @Test
    void writes_onMariaDb_returnTheRowTheReadBackWouldSee() {
        String columns = sql.read.sql().substring("select ".length(), sql.read.sql().indexOf(" from "))
                .replace("`shop`.`tx_inbox`.", "");
        for (InboxSql.Stmt s : new InboxSql.Stmt[] {sql.receive, sql.recordFailure, sql.claim}) {
            assertThat(s.sql().replace("; END", "")).endsWith(" returning " + columns);
            assertThat(s.params()).last().asString().startsWith("token");
        }
        assertThat(sql.returning).isTrue();
    }

    @Test
    void receive_onMariaDb_setsItsSavepointInTheSameStatementUnderABoundName() {
        assertThat(sql.receive.sql()).startsWith("BEGIN NOT ATOMIC EXECUTE IMMEDIATE CONCAT('SAVEPOINT txbox_', ?); "
                + "insert into").endsWith("; END");
        assertThat(sql.recordFailure.sql()).startsWith("insert into");
        assertThat(sql.claim.sql()).startsWith("insert into");
    }

    @Test
    void writes_onMySql_haveNoReturningAndAreReadBack() {
        MariaDbInboxSql mysql = new MariaDbInboxSql(new TxboxTables("shop", "tx_"), Dialect.MYSQL, 5, 30_000_000L,
                1000);
        for (InboxSql.Stmt s : new InboxSql.Stmt[] {mysql.receive, mysql.recordFailure, mysql.claim}) {
            assertThat(s.sql()).startsWith("insert into").doesNotContain("returning").doesNotContain("SAVEPOINT");
        }
        assertThat(mysql.receive.params()).startsWith("consumer", "key", "fingerprint", "token");
        assertThat(mysql.returning).isFalse();
    }

    @Test
    void settings_areInlinedAtBuildTime() {
        assertThat(sql.claim.sql()).contains("CURRENT_TIMESTAMP(6) + INTERVAL 30000000 MICROSECOND").contains(">= 5");
        assertThat(sql.purge.sql()).startsWith("delete from").endsWith("order by `shop`.`tx_inbox`.`completed_at` limit 1000");
    }
}
