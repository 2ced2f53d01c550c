package io.txbox.dynamodb;

import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * A Kafka consumer on the DynamoDB store in its own JVM, for a test that SIGKILLs it:
 * {@code ConsumerChild <endpoint> <table> <effectsTable> <bootstrap> <topic> <consumer>}.
 *
 * <p>The handler records one effect per message, except for keys starting with {@code mid-}: for
 * those it prints {@value #MID_HANDLER} and parks before any effect, a crash in the middle of the
 * work. For a completed message the listener, which hears of it after the store's complete and
 * before the offset commit, prints {@value #COMPLETED} and parks the consumer's thread there, so
 * the offset is never committed.
 */
public final class ConsumerChild {
    static final String READY = "DYNAMO-CHILD-READY";
    static final String COMPLETED = "DYNAMO-CHILD-COMPLETED";
    static final String MID_HANDLER = "DYNAMO-CHILD-MID-HANDLER";
    static final Duration SESSION_TIMEOUT = Duration.ofSeconds(6);
    static final Duration HEARTBEAT_INTERVAL = Duration.ofSeconds(1);
    static final Duration LEASE = Duration.ofSeconds(3);

    private ConsumerChild() {}

    public static void main(String[] args) {
        DynamoDbClient client = Clients.of(URI.create(args[0]));
        String name = args[5];
        Effects effects = new Effects(client, args[2]);
        DynamoStore store = DynamoStore.builder(name).client(client).table(args[1]).lease(LEASE)
                .clockSkewMargin(Duration.ZERO).build();
        ConsumerListener parkAfterComplete = new ConsumerListener() {
            @Override
            public void onOutcome(String consumer, Outcome.Status status, Duration took) {
                if (status == Outcome.Status.PROCESSED) {
                    System.out.println(COMPLETED);
                    System.out.flush();
                    parkForever();
                }
            }
        };
        InboxConsumer consumer = KafkaInboxConsumer.builder(store, m -> {
                    if (m.key().startsWith("mid-")) {
                        System.out.println(MID_HANDLER);
                        System.out.flush();
                        parkForever();
                    }
                    effects.record(name, m.key());
                    return ("done " + m.key()).getBytes(java.nio.charset.StandardCharsets.UTF_8);
                })
                .bootstrapServers(args[3]).topics(args[4]).pollTimeout(Duration.ofMillis(100))
                .consumerProperty("session.timeout.ms", (int) SESSION_TIMEOUT.toMillis())
                .consumerProperty("heartbeat.interval.ms", (int) HEARTBEAT_INTERVAL.toMillis())
                .listener(parkAfterComplete).build();
        consumer.start();
        System.out.println(READY);
        System.out.flush();
        parkForever(); // runs until the test kills the process
    }

    private static void parkForever() {
        try {
            new CountDownLatch(1).await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
