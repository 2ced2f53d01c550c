package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import io.txbox.internal.Dialect;
import org.junit.jupiter.api.Test;

class MariaDbInboxSqlTest {
    private final MariaDbInboxSql sql = new MariaDbInboxSql(new TxboxTables("shop", "tx_"), Dialect.MARIADB, 5,
            30_000_000L, 1000);

    @Test
    void print() {
        for (InboxSql.Stmt s : new InboxSql.Stmt[] {sql.receive, sql.recordFailure, sql.claim, sql.read,
                sql.receivedToken, sql.storeResult, sql.complete, sql.fail, sql.failed, sql.release, sql.resetDead,
                sql.listDead, sql.purge, sql.completedByConsumer, sql.countDead}) {
            System.out.println(s.params() + "\n  " + s.sql());
        }
    }
}
