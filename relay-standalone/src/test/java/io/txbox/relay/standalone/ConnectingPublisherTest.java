package io.txbox.relay.standalone;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.relay.PublishException;
import io.txbox.relay.PublishRecord;
import io.txbox.relay.Publisher;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ConnectingPublisherTest {
    final AtomicLong nanos = new AtomicLong();
    final AtomicInteger attempts = new AtomicInteger();
    volatile boolean brokerUp;
    final Publisher connected = new Publisher() {
        @Override
        public String broker() {
            return "rabbitmq";
        }

        @Override
        public CompletionStage<Void> publish(String target, PublishRecord record) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void close() {}
    };

    ConnectingPublisher publisher() {
        return new ConnectingPublisher("rabbitmq", "r1", () -> {
            attempts.incrementAndGet();
            if (!brokerUp) {
                throw PublishException.retryable("cannot connect to RabbitMQ at rabbit:5672: refused", null);
            }
            return connected;
        }, Duration.ofSeconds(5), nanos::get);
    }

    @Test
    void check_brokerDownAtStart_failsNamingTheBrokerAndTheCause() {
        ConnectingPublisher p = publisher();
        assertThatThrownBy(() -> p.check(Duration.ofSeconds(1))).isInstanceOf(PublishException.class)
                .hasMessageContaining("rabbitmq not connected").hasMessageContaining("refused");
    }

    @Test
    void check_brokerBack_connectsOnceTheRetryIntervalPassed() {
        ConnectingPublisher p = publisher();
        brokerUp = true;
        assertThatThrownBy(() -> p.check(Duration.ofSeconds(1))).as("within the interval").isInstanceOf(PublishException.class);
        nanos.addAndGet(Duration.ofSeconds(5).toNanos());
        p.check(Duration.ofSeconds(1));
        p.check(Duration.ofSeconds(1));
        assertThat(attempts).hasValue(2);
    }

    @Test
    void publish_brokerDown_failsRetryableWithoutBlocking() {
        ConnectingPublisher p = publisher();
        CompletableFuture<Void> f = p.publish("ex", null).toCompletableFuture();
        assertThat(f).isCompletedExceptionally();
        assertThatThrownBy(f::join).hasCauseInstanceOf(PublishException.class);
        assertThat(((PublishException) f.handle((v, e) -> e).join()).retryable()).isTrue();
    }

    @Test
    void close_beforeConnecting_neverConnects() {
        ConnectingPublisher p = publisher();
        p.close();
        brokerUp = true;
        nanos.addAndGet(Duration.ofMinutes(1).toNanos());
        assertThat(p.publish("ex", null).toCompletableFuture()).isCompletedExceptionally();
        assertThat(attempts).hasValue(1);
    }
}
