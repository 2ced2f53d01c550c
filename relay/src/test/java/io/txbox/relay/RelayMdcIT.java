package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import io.txbox.testkit.TestPostgres;
import io.txbox.testkit.TestRabbit;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.MDC;

/** The relay's threads carry its id in the MDC while they publish and settle, for log patterns with {@code %X{txbox.relay}}. */
class RelayMdcIT {
    @RegisterExtension
    static final TestPostgres PG = TestPostgres.perClass();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.perClass();

    @Test
    void batches_runWithTheRelayIdInTheMdc() throws Exception {
        Db db = new Db(PG.dataSource(), PG.schema());
        String exchange = RABBIT.name("mdc");
        Set<String> seen = ConcurrentHashMap.newKeySet();
        RelayListener listener = new RelayListener() {
            @Override
            public void published(String destination, String broker, int count, Duration latency) {
                seen.add(String.valueOf(MDC.get(Relay.MDC_KEY)));
            }

            @Override
            public void backlog(long rows, Duration oldestAge) {
                seen.add("backlog:" + MDC.get(Relay.MDC_KEY));
            }
        };
        try (Connection admin = RABBIT.connectionFactory().newConnection()) {
            Channel ch = admin.createChannel();
            String queue = RABBIT.name("mdc-q");
            ch.exchangeDeclare(exchange, "direct", false, true, null);
            ch.queueDeclare(queue, false, false, true, null);
            ch.queueBind(queue, exchange, "k");
            db.send(Db.message("m-1", "known", "k", "a"), Db.message("m-2", "known", "k", "b"));
            try (RabbitPublisher rabbit = RabbitPublisher.builder().connectionFactory(RABBIT.connectionFactory()).build();
                    Relay relay = Relay.builder().dataSource(db.ds).tables(db.tables).relayId("orders-relay")
                            .route("known", rabbit.exchange(exchange)).pollInterval(Duration.ofMillis(20))
                            .backlogInterval(Duration.ofMillis(100)).listener(listener).build()) {
                relay.start();
                await().atMost(Duration.ofSeconds(10)).until(() -> relay.status().published() == 2
                        && seen.contains("backlog:orders-relay"));
            }
        }
        assertThat(seen).contains("orders-relay", "backlog:orders-relay").doesNotContain("null", "backlog:null");
        assertThat(MDC.get(Relay.MDC_KEY)).as("the caller's thread is left alone").isNull();
    }
}
