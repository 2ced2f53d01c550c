package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * Change-data-capture mode on PostgreSQL and MariaDB, as the database sees it: the row is inserted
 * marked captured and deleted in the sender's transaction, a row the relay still holds keeps its
 * step key, and delayed sends are refused. What a connector makes of it is {@code CdcIT}'s part.
 */
class OutboxCdcIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass();

    @BeforeAll
    static void migrate() {
        DBS.all().forEach(db -> TxboxMigrations.migrate(db.dataSource(), TxboxTables.inSchema(db.schema())));
    }

    static OutboxMessage message(String key, String destination) {
        return OutboxMessage.builder(StepKey.of(key, "step"), destination).routingKey("r").payload("p").build();
    }

    static List<String> rows(TestDatabase db) throws Exception {
        List<String> out = new ArrayList<>();
        try (Connection c = db.connection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT step_key, destination, captured FROM "
                        + db.qualified(db.schema(), "txbox_outbox") + " ORDER BY id")) {
            while (rs.next()) {
                out.add(rs.getString(1) + "@" + rs.getString(2) + (rs.getBoolean(3) ? " captured" : ""));
            }
        }
        return out;
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_captured_leavesNoRow_andPolledDestinationsKeepTheirs(TestDatabase db) throws Exception {
        Outbox outbox = Outbox.builder().tables(TxboxTables.inSchema(db.schema()))
                .changeDataCapture(Set.of("cdc-" + db.kind().name())).build();
        String cdc = "cdc-" + db.kind().name();
        String polled = "polled-" + db.kind().name();
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThat(outbox.send(c, message("a-" + cdc, cdc))).isTrue();
            assertThat(outbox.send(c, message("a-" + cdc, cdc))).as("the same step again: its row is already gone").isTrue();
            assertThat(outbox.sendAll(c, List.of(message("b-" + cdc, cdc), message("b-" + polled, polled))))
                    .containsExactly(true, true);
            c.commit();
        }
        assertThat(rows(db)).contains("b-" + polled + ":step@" + polled).noneMatch(r -> r.contains(cdc));
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void sendAll_capturedAndPolledInterleaved_answersInOrder_andOnlyPolledRowsStay(TestDatabase db) throws Exception {
        String cdc = "mix-cdc-" + db.kind().name();
        String polled = "mix-polled-" + db.kind().name();
        Outbox outbox = Outbox.builder().tables(TxboxTables.inSchema(db.schema())).changeDataCapture(Set.of(cdc)).build();
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThat(outbox.send(c, message("p0-" + polled, polled))).isTrue();
            c.commit();
            assertThat(outbox.sendAll(c, List.of(message("c1-" + cdc, cdc), message("p0-" + polled, polled),
                    message("c2-" + cdc, cdc), message("p1-" + polled, polled), message("c3-" + cdc, cdc))))
                    .as("the polled step already in the outbox is the one not written").containsExactly(true, false, true, true, true);
            c.commit();
        }
        assertThat(rows(db)).filteredOn(r -> r.contains("mix-"))
                .containsExactly("p0-" + polled + ":step@" + polled, "p1-" + polled + ":step@" + polled);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_captured_stepKeyHeldByARelaysRow_writesNothing(TestDatabase db) throws Exception {
        String d = "switch-" + db.kind().name();
        Outbox polling = Outbox.builder().tables(TxboxTables.inSchema(db.schema())).build();
        Outbox capturing = Outbox.builder().tables(TxboxTables.inSchema(db.schema())).changeDataCapture().build();
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThat(polling.send(c, message("held-" + d, d))).isTrue();
            c.commit();
            assertThat(capturing.send(c, message("held-" + d, d))).isFalse();
            c.commit();
        }
        assertThat(rows(db)).filteredOn(r -> r.contains(d)).containsExactly("held-" + d + ":step@" + d);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void send_captured_delayed_isRefused_andWritesNothing(TestDatabase db) throws Exception {
        String d = "delayed-" + db.kind().name();
        Outbox capturing = Outbox.builder().tables(TxboxTables.inSchema(db.schema())).changeDataCapture().build();
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> capturing.send(c, OutboxMessage.builder(StepKey.of("x", "step"), d).payload("p")
                    .delay(Duration.ofSeconds(1)).build())).isInstanceOf(InvalidInputException.class)
                    .hasMessageContaining(d).hasMessageContaining("delay").hasMessageContaining("change-data-capture");
            assertThatThrownBy(() -> capturing.sendAll(c, List.of(message("y", d), OutboxMessage.builder(StepKey.of("z", "step"), d)
                    .payload("p").availableAt(Instant.now().plusSeconds(60)).build())))
                    .isInstanceOf(InvalidInputException.class).hasMessageContaining("availableAt");
            c.commit();
        }
        assertThat(rows(db)).noneMatch(r -> r.contains(d));
    }

    @Test
    void changeDataCapture_emptyOrBlankDestinations_areRefused() {
        assertThatThrownBy(() -> Outbox.builder().changeDataCapture(Set.of())).isInstanceOf(ConfigException.class)
                .hasMessageContaining("changeDataCapture()");
        assertThatThrownBy(() -> Outbox.builder().changeDataCapture(List.of("a", " "))).isInstanceOf(ConfigException.class)
                .hasMessageContaining("' '");
        assertThatThrownBy(() -> Outbox.builder().changeDataCapture(null)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("changeDataCapture destinations");
    }
}
