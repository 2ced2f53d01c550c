package io.txbox.bench;

import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.ParkedKeys;
import io.txbox.inbox.consumer.ConsumerListener;
import io.txbox.inbox.consumer.InboxConsumer;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * {@code consumer-kafka --poison F}: the same backlog drained twice in one run by
 * {@code KafkaInboxConsumer} with {@code parkKeys(true)}, once clean and once with the first
 * message of a fraction {@code F} of the ordering keys failing every time. The poison messages
 * go DEAD after {@code --max-attempts} (each retry pauses the partition for the backoff), park
 * their keys, and the keys' later messages park behind them. Reports the healthy keys' rate with
 * poison / without ({@code healthy_ratio}), and checks that every healthy message took effect
 * once and every message of a poison key is parked.
 */
final class ConsumerPoison {
    private static final Duration DRAIN_TIMEOUT = Duration.ofMinutes(10);

    private BenchEnv env;
    private Report report;
    private final int messages;
    private final int keys;
    private final double poison;
    private final int partitions;
    private final int maxAttempts;
    private final Duration backoff;
    private final int payloadBytes;
    private int passes;
    boolean broken;

    /**
     * Reads the poison options (declared whatever their values, so that they are known options);
     * {@code null} without {@code --poison}.
     */
    static ConsumerPoison configure(Options o, boolean kafka, int messages, int partitions, int payloadBytes) {
        double poison = o.doubleValue("poison", 0, "consumer-kafka only: instead, compare the healthy keys' rate with "
                + "this fraction of ordering keys poison (parkKeys) against none, in the same run");
        int keys = o.intValue("keys", 1000, "with --poison: ordering keys the messages are spread over");
        int maxAttempts = o.intValue("max-attempts", 3, "with --poison: the inbox's maxAttempts");
        int backoffMs = o.intValue("backoff-ms", 50, "with --poison: the consumer's initial backoff");
        if (poison == 0) {
            return null;
        }
        if (!kafka) {
            throw new Options.UsageException("--poison runs on consumer-kafka only");
        }
        return new ConsumerPoison(messages, partitions, payloadBytes, poison, keys, maxAttempts, backoffMs);
    }

    private ConsumerPoison(int messages, int partitions, int payloadBytes, double poison, int keys, int maxAttempts,
            int backoffMs) {
        this.messages = messages;
        this.partitions = partitions;
        this.payloadBytes = payloadBytes;
        this.poison = poison;
        this.keys = keys;
        this.maxAttempts = maxAttempts;
        this.backoff = Duration.ofMillis(backoffMs);
        if (poison <= 0 || poison >= 1 || keys < 1 || keys > messages || maxAttempts < 1 || backoff.isNegative()
                || backoff.isZero()) {
            throw new Options.UsageException("need 0 < --poison < 1, 1 <= --keys <= --messages, --max-attempts >= 1, "
                    + "--backoff-ms >= 1");
        }
    }

    void run(BenchEnv env, Report report) throws Exception {
        this.env = env;
        this.report = report;
        Set<Integer> poisonKeys = new HashSet<>();
        int count = Math.max(1, (int) Math.round(poison * keys));
        for (int i = 0; i < count; i++) {
            poisonKeys.add((int) ((long) i * keys / count));
        }
        int poisonMessages = 0;
        for (int i = 0; i < messages; i++) {
            if (poisonKeys.contains(i % keys)) {
                poisonMessages++;
            }
        }
        // ABBA: clean, poisoned, poisoned, clean.
        double clean = pass(Set.of(), messages);
        double poisoned = pass(poisonKeys, messages - poisonMessages);
        poisoned = (poisoned + pass(poisonKeys, messages - poisonMessages)) / 2;
        clean = (clean + pass(Set.of(), messages)) / 2;
        report.figure("healthy_msgs_per_sec_clean", Math.round(clean), "msg/s");
        report.figure("healthy_msgs_per_sec_poisoned", Math.round(poisoned), "msg/s");
        report.figure("healthy_ratio", Math.round(poisoned / clean * 100) / 100.0, null);
        report.figure("poison_keys", count, null);
        report.figure("parked_messages_per_pass", poisonMessages, null);
        report.figure("broken_passes", broken ? 1 : 0, null);
        report.note("--poison " + poison + ": " + count + " of " + keys + " ordering keys poison (their first message "
                + "fails every time: " + maxAttempts + " attempts, backoff from " + backoff.toMillis() + " ms, each "
                + "pausing its partition), parkKeys(true), one transaction per record; healthy rate with poison / "
                + "without, same run, ABBA");
    }

    /** Drains a fresh backlog; returns the healthy messages' rate. */
    private double pass(Set<Integer> poisonKeys, int healthy) throws Exception {
        int id = ++passes;
        String name = "consumer-poison-" + id;
        String topic = env.schema + "-" + name;
        env.createTopic(topic, partitions);
        Set<String> poisonMessages = new HashSet<>();
        for (int k : poisonKeys) {
            poisonMessages.add("m-" + k); // the key's first message
        }
        fill(topic);
        DataSource ds = env.pool(name, 2, false);
        AtomicLong done = new AtomicLong();
        long[] span = new long[2];
        CountDownLatch reached = new CountDownLatch(1);
        Handler handler = (tx, m) -> {
            if (poisonMessages.contains(m.key())) {
                throw new IllegalStateException("poison " + m.key());
            }
            try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + env.businessTable()
                    + " (message_key, amount) VALUES (?, ?)")) {
                ps.setString(1, m.key());
                ps.setLong(2, 1000 + id);
                ps.executeUpdate();
            }
            long now = System.nanoTime();
            long before = done.getAndIncrement();
            if (before == 0) {
                span[0] = now;
            }
            if (before + 1 >= healthy) {
                span[1] = now;
                reached.countDown();
            }
            return null;
        };
        Inbox inbox = Inbox.builder(name).tables(env.tables).maxAttempts(maxAttempts).build();
        long expectParked = messages - healthy;
        AtomicLong parked = new AtomicLong();
        CountDownLatch allParked = new CountDownLatch(1);
        ConsumerListener parkedStats = new ConsumerListener() {
            @Override
            public void onParked(String consumer, ParkedKeys.Stats stats) {
                parked.set(stats.messages());
                if (stats.messages() >= expectParked) {
                    allParked.countDown();
                }
            }
        };
        try (InboxConsumer consumer = KafkaInboxConsumer.builder(inbox, ds, handler)
                .bootstrapServers(env.kafkaBootstrap()).topics(topic).backoff(backoff, backoff.multipliedBy(4))
                .parkKeys(true).parkedPollInterval(Duration.ofMillis(100)).listener(parkedStats).build()) {
            consumer.start();
            if (!reached.await(DRAIN_TIMEOUT.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new IllegalStateException("only " + done.get() + " of " + healthy + " healthy messages in "
                        + DRAIN_TIMEOUT);
            }
            allParked.await(DRAIN_TIMEOUT.toNanos(), TimeUnit.NANOSECONDS); // a shortfall is reported below
        }
        check(name, id, healthy, parked.get(), expectParked);
        double rate = healthy <= 1 ? healthy : (healthy - 1) * 1e9 / Math.max(1, span[1] - span[0]);
        Scenario.log("%s: %d healthy messages, %.0f msg/s, %d parked", name, healthy, rate, parked.get());
        return rate;
    }

    private void fill(String topic) {
        byte[] payload = Scenario.payload(payloadBytes);
        try (KafkaProducer<byte[], byte[]> producer = KafkaAdmin.fillProducer(env.kafkaBootstrap())) {
            for (int i = 0; i < messages; i++) {
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic,
                        ("k-" + (i % keys)).getBytes(StandardCharsets.UTF_8), payload);
                r.headers().add("idempotency-key", ("m-" + i).getBytes(StandardCharsets.UTF_8));
                producer.send(r);
            }
            producer.flush();
        }
    }

    private void check(String name, int id, int healthy, long parked, long expectParked) throws SQLException {
        try (java.sql.Connection c = env.adminConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*), count(DISTINCT message_key) FROM "
                        + env.businessTable() + " WHERE amount = " + (1000 + id))) {
            rs.next();
            if (rs.getLong(1) != healthy || rs.getLong(2) != healthy || parked != expectParked) {
                broken = true;
                report.note(name + ": " + rs.getLong(2) + " of " + healthy + " healthy keys took effect, "
                        + (rs.getLong(1) - rs.getLong(2)) + " twice; " + parked + " of " + expectParked + " parked");
            }
        }
    }
}
