package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.testkit.TestKafka;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;

/**
 * A relay frozen in the middle of a batch past its lane lease, whose lanes another relay took
 * over, resumes and tries to finish its stale batch. Without strict fencing those messages reach
 * the topic again; with it, the broker has fenced the frozen relay's transactions and a
 * read_committed consumer sees every message once.
 */
class KafkaStrictFencingIT {
    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(10);

    static final Map<TestDatabase.Kind, Db> DB = new EnumMap<>(TestDatabase.Kind.class);

    @RegisterExtension
    static final TestKafka KAFKA = TestKafka.shared();

    Db db;

    @BeforeAll
    static void setUp() {
        DBS.all().forEach(d -> DB.put(d.kind(), new Db(d)));
    }

    /** Freezes its relay's worker at the end of the first batch, after every send, until released. */
    static final class Freezing implements Publisher {
        final Publisher delegate;
        final CountDownLatch frozen = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);
        final CountDownLatch finished = new CountDownLatch(1);

        Freezing(Publisher delegate) {
            this.delegate = delegate;
        }

        @Override
        public String broker() {
            return delegate.broker();
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            return delegate.publish(target, record);
        }

        @Override
        public void endOfBatch() {
            if (frozen.getCount() > 0) {
                frozen.countDown();
                try {
                    resume.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                try {
                    delegate.endOfBatch();
                } finally {
                    finished.countDown();
                }
                return;
            }
            delegate.endOfBatch();
        }

        @Override
        public void close() {
            delegate.close();
        }
    }

    static KafkaPublisher.Builder kafka() {
        return KafkaPublisher.builder().bootstrapServers(KAFKA.bootstrapServers())
                .property("delivery.timeout.ms", "3000").property("request.timeout.ms", "1000")
                .property("max.block.ms", "5000");
    }

    Relay relay(String id, Publisher publisher, String topic) {
        // a short lane lease: the frozen relay's database session ends and its lanes are taken over after 2 s
        return Relay.builder().dataSource(db.ds).tables(db.tables).relayId(id).workers(1)
                .route("payments", Route.of(publisher, topic)).pollInterval(Duration.ofMillis(20))
                .publishTimeout(Duration.ofMillis(1500)).laneLease(Duration.ofSeconds(2))
                .backoff(Duration.ofMillis(50), Duration.ofMillis(200)).backlogInterval(Duration.ZERO).build();
    }

    /** Runs the freeze-and-take-over scenario and returns what a consumer reads, by step key. */
    Map<String, Long> frozenRelayResumes(Function<String, KafkaPublisher> publisher, boolean readCommitted, int n)
            throws Exception {
        String topic = KAFKA.uniqueTopic("strict");
        KAFKA.createTopic(topic, 4);
        String prefix = "t" + System.nanoTime();
        db.sendMany(n, i -> Db.message("s" + prefix + "-" + i, "payments", "acct-" + (i % 9), String.valueOf(i)));

        Freezing frozen = new Freezing(publisher.apply(prefix));
        Relay zombie = relay("zombie-" + prefix, frozen, topic);
        zombie.start();
        assertThat(frozen.frozen.await(30, TimeUnit.SECONDS)).isTrue();

        try (Relay successor = relay("successor-" + prefix, publisher.apply(prefix), topic)) {
            successor.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> db.outboxRows() == 0);
            frozen.resume.countDown();
            assertThat(frozen.finished.await(30, TimeUnit.SECONDS)).isTrue();
        } finally {
            frozen.resume.countDown();
            zombie.close();
        }
        try (Consumed consumed = new Consumed(KAFKA.bootstrapServers(), topic, readCommitted)) {
            List<ConsumerRecord<byte[], byte[]>> all = consumed.drainToEnd(Duration.ofSeconds(30));
            return all.stream().collect(Collectors.groupingBy(r -> Consumed.header(r, "idempotency-key"), Collectors.counting()));
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void strictFencing_frozenRelayResumesAfterTakeover_publishesNothingStale(TestDatabase database) throws Exception {
        db = DB.get(database.kind());
        int n = 300;
        Map<String, Long> seen = frozenRelayResumes(prefix -> kafka().strictFencing("txbox-it-" + prefix).build(), true, n);
        assertThat(seen).hasSize(n);
        assertThat(seen.values()).as("copies per message").containsOnly(1L);
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void withoutStrictFencing_frozenRelayResumesAfterTakeover_publishesItsStaleBatchAgain(TestDatabase database) throws Exception {
        db = DB.get(database.kind());
        int n = 300;
        Map<String, Long> seen = frozenRelayResumes(prefix -> kafka().build(), false, n);
        assertThat(seen).hasSize(n);
        assertThat(seen.values()).as("the stale batch arrives twice").contains(2L);
    }
}
