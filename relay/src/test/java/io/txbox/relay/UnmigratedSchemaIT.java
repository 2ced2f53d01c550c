package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.slf4j.LoggerFactory;

/** A relay started on a schema without txbox tables says so once and reports not ready. */
class UnmigratedSchemaIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    final ListAppender<ILoggingEvent> logged = new ListAppender<>();
    final Logger relayLogs = (Logger) LoggerFactory.getLogger("io.txbox.relay");

    @BeforeEach
    void capture() {
        logged.start();
        relayLogs.addAppender(logged);
    }

    @AfterEach
    void release() {
        relayLogs.detachAppender(logged);
    }

    static final class Confirming implements Publisher {
        @Override
        public String broker() {
            return "confirming";
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void close() {}
    }

    List<ILoggingEvent> warnings() {
        return logged.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN)).toList();
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void relay_emptySchema_notReadyWithOneInstructionThenPublishesOnceMigrated(TestDatabase database) {
        String schema = database.newSchema("empty");
        TxboxTables tables = TxboxTables.inSchema(schema);
        String expected = "schema " + schema + " has no txbox tables: run TxboxMigrations.migrate (or `txbox-relay migrate`) first";
        try (Relay relay = Relay.builder().dataSource(database.dataSource()).tables(tables).workers(2)
                .route("d", Route.of(new Confirming(), "t")).pollInterval(Duration.ofMillis(20))
                .backlogInterval(Duration.ofMillis(100)).build()) {
            relay.start();

            RelayStatus.Health h = relay.health(Duration.ofSeconds(2));
            assertThat(h.up()).isFalse();
            assertThat(h.database()).startsWith("DOWN: " + expected);
            await().atMost(Duration.ofSeconds(10)).until(() -> String.valueOf(relay.status().lastError()).startsWith(expected));
            // both workers and the backlog sampler keep failing for a while: still one line, no stack trace
            await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(4)).until(() -> warnings().size() == 1);
            ILoggingEvent only = warnings().get(0);
            assertThat(only.getFormattedMessage()).contains(expected);
            assertThat(only.getThrowableProxy()).isNull();
            assertThat(logged.list).noneMatch(e -> e.getFormattedMessage().contains("does not exist"));

            TxboxMigrations.migrate(database.dataSource(), tables);
            Db db = new Db(database, schema);
            db.send(Db.message("k1", "d", "rk", "p"));
            await().atMost(Duration.ofSeconds(15)).until(() -> db.outboxRows() == 0);
            assertThat(relay.health(Duration.ofSeconds(2)).up()).isTrue();
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void relay_emptySchema_closesWithoutMoreWarningsThanTheOneInstruction(TestDatabase database) {
        String schema = database.newSchema("empty_close");
        TxboxTables tables = TxboxTables.inSchema(schema);
        try (Relay relay = Relay.builder().dataSource(database.dataSource()).tables(tables).workers(2)
                .route("d", Route.of(new Confirming(), "t")).pollInterval(Duration.ofMillis(20)).build()) {
            relay.start();
            await().atMost(Duration.ofSeconds(10)).until(() -> String.valueOf(relay.status().lastError())
                    .contains("has no txbox tables"));
        }
        assertThat(warnings()).as("warnings: %s", warnings().stream().map(ILoggingEvent::getFormattedMessage).toList())
                .hasSize(1);
        assertThat(warnings().get(0).getFormattedMessage()).contains("schema " + schema + " has no txbox tables");
    }
}
