package io.txbox.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.http.HttpIdempotency;
import io.txbox.inbox.http.HttpRequestData;
import io.txbox.inbox.http.HttpResponseData;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import io.txbox.testkit.TestRabbit;
import io.txbox.testkit.TestRedis;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/** The hybrid inbox in the places the database inbox goes: the HTTP helper and a broker consumer, unchanged. */
class HybridPlugInIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(8);

    /** The database of the running test. */
    static TestDatabase current;

    @RegisterExtension
    static final TestRedis REDIS = TestRedis.perClass();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    /** This class's Redis key prefix, one per database so that the runs do not meet. */
    static String prefix() {
        return REDIS.prefix() + current.kind().name().toLowerCase(java.util.Locale.ROOT) + ":";
    }

    /** The txbox tables in the running test's database. */
    static TxboxTables tables() {
        return TxboxTables.inSchema(current.schema());
    }

    @BeforeAll
    static void migrate() throws Exception {
        for (TestDatabase d : DBS.all()) {
            TxboxMigrations.migrate(d.dataSource(), TxboxTables.inSchema(d.schema()));
            try (Connection c = d.dataSource().getConnection(); Statement s = c.createStatement()) {
                s.execute("create table effects (consumer text not null, message_key text not null)");
            }
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void httpIdempotency_wrappedInHybrid_replaysFromRedis_andTheHandlerRunsOnce(TestDatabase testDb) {
        current = testDb;
        AtomicInteger runs = new AtomicInteger();
        Inbox db = Inbox.builder("payments-api").tables(tables()).fingerprint(HttpIdempotency.fingerprint()).build();
        try (HybridInbox hybrid = HybridInbox.builder(db).redisUrl(REDIS.url()).keyPrefix(prefix()).build()) {
            HttpIdempotency http = HttpIdempotency.builder(hybrid, current.dataSource()).build();
            HttpRequestData request = new HttpRequestData("POST", "/payments",
                    Map.of("Idempotency-Key", List.of("pay-1")), "{\"amount\":5}".getBytes(UTF_8));

            HttpResponseData first = http.handle(request, r -> {
                runs.incrementAndGet();
                return HttpResponseData.of(201, "application/json", "{\"id\":1}");
            });
            HttpResponseData replay = http.handle(request, r -> {
                runs.incrementAndGet();
                return HttpResponseData.of(201, "application/json", "{\"id\":2}");
            });

            assertThat(runs).hasValue(1);
            assertThat(first.status()).isEqualTo(201);
            assertThat(replay.status()).isEqualTo(201);
            assertThat(new String(replay.body(), UTF_8)).isEqualTo("{\"id\":1}");
            assertThat(REDIS.commands().hget(prefix() + "cache|payments-api|k|pay-1", "s"))
                    .as("the replay came from the Redis cache").isEqualTo("C");
            HttpResponseData otherPath = http.handle(new HttpRequestData("POST", "/refunds",
                    Map.of("Idempotency-Key", List.of("pay-1")), "{\"amount\":5}".getBytes(UTF_8)),
                    r -> HttpResponseData.of(201, "application/json", "{}"));
            assertThat(otherPath.status()).as("same key on another request: the database inbox's 422").isEqualTo(422);
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void rabbitConsumer_withHybridInbox_fiveDeliveriesOfOneKey_oneEffect(TestDatabase testDb) throws Exception {
        current = testDb;
        String queue = RABBIT.name("hybrid");
        try (com.rabbitmq.client.Connection rabbit = RABBIT.newConnection(); Channel ch = rabbit.createChannel();
                HybridInbox inbox = HybridInbox.builder(Inbox.builder("hybrid-rabbit").tables(tables()).build())
                        .redisUrl(REDIS.url()).keyPrefix(prefix()).build()) {
            ch.queueDeclare(queue, true, false, false, null);
            try (InboxConsumer consumer = RabbitInboxConsumer.builder(inbox, current.dataSource(), (tx, m) -> {
                        try (PreparedStatement ps = tx.prepareStatement("insert into effects values (?, ?)")) {
                            ps.setString(1, "hybrid-rabbit");
                            ps.setString(2, m.key());
                            ps.executeUpdate();
                        }
                        return null;
                    })
                    .connectionFactory(RABBIT.connectionFactory()).queue(queue)
                    .deadLetterExchange(RABBIT.name("hybrid-dlx")).concurrency(4).prefetch(4)
                    .backoff(Duration.ofMillis(50), Duration.ofMillis(200)).build()) {
                consumer.start();
                AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                        .headers(Map.of("idempotency-key", "order-7")).deliveryMode(2).build();
                for (int i = 0; i < 5; i++) {
                    ch.basicPublish("", queue, props, "order 7".getBytes(UTF_8));
                }
                await().atMost(Duration.ofSeconds(30)).until(() -> ch.messageCount(queue) == 0
                        && ch.consumerCount(queue) > 0 && effects("hybrid-rabbit") == 1);
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> "C".equals(REDIS.commands().hget(prefix() + "cache|hybrid-rabbit|k|order-7", "s")));
                assertThat(effects("hybrid-rabbit")).isEqualTo(1);
            } finally {
                ch.queueDelete(queue);
                ch.queueDelete(queue + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX);
            }
        }
    }

    static int effects(String consumer) throws Exception {
        try (Connection c = current.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement("select count(*) from effects where consumer = ?")) {
            ps.setString(1, consumer);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}
