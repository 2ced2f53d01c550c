package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.platform.testkit.engine.EventConditions.event;
import static org.junit.platform.testkit.engine.EventConditions.finishedWithFailure;
import static org.junit.platform.testkit.engine.TestExecutionResultConditions.instanceOf;
import static org.junit.platform.testkit.engine.TestExecutionResultConditions.message;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;

class TestRabbitTest {

  @Test
  void unreachableNode_failsClassQuicklyNamingServiceAddressAndFix() throws IOException {
    long start = System.nanoTime();

    var results = Fixtures.run(UnreachableFixture.class);

    Duration took = Duration.ofNanos(System.nanoTime() - start);
    results.containerEvents().assertThatEvents().haveExactly(1, event(finishedWithFailure(
        instanceOf(TestkitException.class),
        message(m -> m.contains("RabbitMQ") && m.contains("127.0.0.1:" + UnreachableFixture.PORT)
            && m.contains("rabbitmq-server -detached") && !m.contains("secret")))));
    assertThat(took).isLessThan(Duration.ofSeconds(5));
  }

  @Test
  void redact_dropsThePasswordOnly() {
    assertThat(TestRabbit.redact("amqp://guest:secret@host:5672/vh"))
        .isEqualTo("amqp://guest@host:5672/vh");
    assertThat(TestRabbit.redact("amqp://host/")).isEqualTo("amqp://host/");
    assertThat(TestRabbit.redact("amqp://guest:secret@host:5672/%2f?heartbeat=5"))
        .isEqualTo("amqp://guest@host:5672/%2f?heartbeat=5");
  }

  @Test
  void withDefaultVirtualHost_addsTheDefaultVirtualHostOnlyWhenNoneIsNamed() {
    assertThat(TestRabbit.withDefaultVirtualHost("amqp://guest:guest@127.0.0.1:5672/"))
        .isEqualTo("amqp://guest:guest@127.0.0.1:5672/%2f");
    assertThat(TestRabbit.withDefaultVirtualHost("amqp://h:5672")).isEqualTo("amqp://h:5672/%2f");
    assertThat(TestRabbit.withDefaultVirtualHost("amqp://h/?heartbeat=5"))
        .isEqualTo("amqp://h/%2f?heartbeat=5");
    assertThat(TestRabbit.withDefaultVirtualHost("amqp://h/orders")).isEqualTo("amqp://h/orders");
  }

  @Test
  void builder_rejectsBadSettingsNamingTheValue() {
    assertThatThrownBy(() -> TestRabbit.builder().uri("http://host"))
        .hasMessageContaining("http://host");
    assertThatThrownBy(() -> TestRabbit.builder().rabbitmqctl(List.of()))
        .hasMessageContaining("rabbitmqctl");
    assertThatThrownBy(() -> TestRabbit.builder().connectTimeout(Duration.ofMillis(1)))
        .hasMessageContaining("connectTimeout");
  }

  @EnabledIf("io.txbox.testkit.Fixtures#running")
  static class UnreachableFixture {
    static final int PORT = Fixtures.closedPort();

    @RegisterExtension
    static final TestRabbit RABBIT = TestRabbit.builder()
        .uri("amqp://guest:secret@127.0.0.1:" + PORT + "/")
        .build();

    @Test
    void neverRuns() {}
  }
}
