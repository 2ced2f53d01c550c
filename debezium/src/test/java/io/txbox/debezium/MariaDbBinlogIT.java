package io.txbox.debezium;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.github.shyiko.mysql.binlog.BinaryLogClient;
import com.github.shyiko.mysql.binlog.event.DeleteRowsEventData;
import com.github.shyiko.mysql.binlog.event.EventData;
import com.github.shyiko.mysql.binlog.event.TableMapEventData;
import com.github.shyiko.mysql.binlog.event.WriteRowsEventData;
import com.github.shyiko.mysql.binlog.event.XidEventData;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.testkit.TestCdc;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * MariaDB's side of change data capture, read straight from the binlog with the client library
 * Debezium's binlog connectors use: a captured send is an insert with {@code captured = 1} and a
 * delete of the same row in one transaction, a rolled-back send leaves nothing, and a polled send is
 * an insert with {@code captured = 0} (which the router drops).
 */
class MariaDbBinlogIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    /** The outbox's columns in table order: step_key is the second, captured (migration V6) the last. */
    static final int STEP_KEY = 1;

    static String text(Serializable v) {
        return v instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(v);
    }

    @Test
    void capturedSend_isAnInsertAndDeleteInOneTransaction_rollbackLeavesNothing() throws Exception {
        TestDatabase db = DBS.mariadb();
        TestCdc.require(db);
        TxboxTables tables = TxboxTables.inSchema(db.schema());
        TxboxMigrations.migrate(db.dataSource(), tables);
        String d = "binlog";
        Outbox outbox = Outbox.builder().tables(tables).changeDataCapture(Set.of(d)).build();
        Map<Long, String> tableNames = new ConcurrentHashMap<>();
        List<String> events = new CopyOnWriteArrayList<>();
        BinaryLogClient client = new BinaryLogClient("127.0.0.1", 3306, db.user(), db.password());
        client.setServerId(200_000 + ThreadLocalRandom.current().nextInt(1_000_000));
        client.registerEventListener(event -> {
            EventData data = event.getData();
            if (data instanceof TableMapEventData map) {
                tableNames.put(map.getTableId(), map.getDatabase() + "." + map.getTable());
            } else if (data instanceof WriteRowsEventData w && (db.schema() + ".txbox_outbox").equals(tableNames.get(w.getTableId()))) {
                for (Serializable[] row : w.getRows()) {
                    events.add("insert " + text(row[STEP_KEY]) + " captured=" + text(row[row.length - 1]));
                }
            } else if (data instanceof DeleteRowsEventData del && (db.schema() + ".txbox_outbox").equals(tableNames.get(del.getTableId()))) {
                for (Serializable[] row : del.getRows()) {
                    events.add("delete " + text(row[STEP_KEY]));
                }
            } else if (data instanceof XidEventData && !events.isEmpty() && !events.get(events.size() - 1).equals("commit")) {
                events.add("commit");
            }
        });
        client.connect(30_000);
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            outbox.send(c, OutboxMessage.builder(StepKey.of("rolled-back", "s"), d).payload("x").build());
            c.rollback();
            outbox.send(c, OutboxMessage.builder(StepKey.of("captured", "s"), d).payload("x").build());
            c.commit();
            outbox.send(c, OutboxMessage.builder(StepKey.of("polled", "s"), "elsewhere").payload("x").build());
            c.commit();
            await().atMost(Duration.ofSeconds(30)).until(() -> events.size() >= 5);
        } finally {
            client.disconnect();
        }
        assertThat(events).containsExactly("insert captured:s captured=1", "delete captured:s", "commit",
                "insert polled:s captured=0", "commit");
    }
}
