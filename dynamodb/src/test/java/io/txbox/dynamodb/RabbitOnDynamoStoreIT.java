package io.txbox.dynamodb;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.GetResponse;
import io.txbox.inbox.consumer.DeadLetterHeaders;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.testkit.TestRabbit;
import io.txbox.testkit.TestDynamo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * A RabbitMQ consumer with no relational database: claims in a {@link DynamoStore}, the work, the
 * completion in DynamoDB, then the ack. Against dynalite and the real RabbitMQ.
 */
class RabbitOnDynamoStoreIT {
    @RegisterExtension
    static final TestDynamo DYNAMO = TestDynamo.perClass();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    static final Duration WAIT = Duration.ofSeconds(90);

    static DynamoDbClient client;

    @BeforeAll
    static void createTable() {
        client = Clients.of(DYNAMO.endpoint());
        DynamoStore.createTable(client, DYNAMO.table("inbox"));
    }

    @AfterAll
    static void closeClient() {
        client.close();
    }

    @Test
    void rabbit_onDynamoStore_workOncePerKey_duplicatesAcked_poisonDeadLettered() throws Exception {
        String queue = RABBIT.name("dynamo-consumer");
        String deadLetters = RABBIT.name("dynamo-consumer-dlx");
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        DynamoStore store = DynamoStore.builder("dynamo-consumer").client(client).table(DYNAMO.table("inbox"))
                .maxAttempts(2).build();
        try (com.rabbitmq.client.Connection rabbit = RABBIT.newConnection(); Channel ch = rabbit.createChannel()) {
            ch.queueDeclare(queue, true, false, false, null);
            RABBIT.track(queue + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX);
            InboxConsumer consumer = RabbitInboxConsumer.builder(store, m -> {
                        if (m.key().equals("poison")) {
                            throw new IllegalStateException("cannot parse order");
                        }
                        runs.computeIfAbsent(m.key(), k -> new AtomicInteger()).incrementAndGet();
                        return "sent".getBytes(UTF_8);
                    })
                    .connectionFactory(RABBIT.connectionFactory()).queue(queue).deadLetterExchange(deadLetters)
                    .backoff(Duration.ofMillis(100), Duration.ofMillis(400)).build();
            try {
                consumer.start();
                publish(ch, queue, "poison");
                for (int i = 0; i < 10; i++) {
                    publish(ch, queue, "r-" + i);
                    publish(ch, queue, "r-" + i); // the same message again
                }

                List<GetResponse> dead = new ArrayList<>();
                await().atMost(WAIT).until(() -> {
                    GetResponse r = ch.basicGet(queue + RabbitInboxConsumer.DEAD_LETTER_QUEUE_SUFFIX, true);
                    if (r != null) {
                        dead.add(r);
                    }
                    return dead.size() == 1 && runs.size() == 10 && ch.messageCount(queue) == 0;
                });
                assertThat(runs).allSatisfy((k, n) -> assertThat(n.get()).as(k).isEqualTo(1));
                assertThat(dead.get(0).getProps().getHeaders().get(DeadLetterHeaders.REASON).toString())
                        .contains("cannot parse order");
            } finally {
                consumer.close();
            }
        }
    }

    private static void publish(Channel ch, String queue, String key) throws Exception {
        ch.basicPublish("", queue, new AMQP.BasicProperties.Builder().deliveryMode(2)
                .headers(Map.of("idempotency-key", key)).build(), "order".getBytes(UTF_8));
    }
}
