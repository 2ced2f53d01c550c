package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.extension.RegisterExtension;

class TestRabbitIT {

  @RegisterExtension static final TestRabbit RABBIT = TestRabbit.perClass();

  // A second extension stands in for another test class.
  @RegisterExtension static final TestRabbit OTHER = TestRabbit.perClass();

  @Test
  void messagePublishedToUniqueNames_isConsumed() throws Exception {
    String exchange = RABBIT.name("orders");
    String queue = RABBIT.name("orders-in");
    try (Connection connection = RABBIT.newConnection();
        Channel channel = connection.createChannel()) {
      channel.exchangeDeclare(exchange, BuiltinExchangeType.DIRECT, false);
      channel.queueDeclare(queue, false, false, false, null);
      channel.queueBind(queue, exchange, "created");

      channel.basicPublish(exchange, "created", null, "hello".getBytes(StandardCharsets.UTF_8));

      AtomicReference<GetResponse> got = new AtomicReference<>();
      await().atMost(Duration.ofSeconds(10)).until(() -> {
        got.compareAndSet(null, basicGet(channel, queue));
        return got.get() != null;
      });
      assertThat(new String(got.get().getBody(), StandardCharsets.UTF_8)).isEqualTo("hello");
    }
  }

  @Test
  void uri_opensAConnectionWithAPlainClientFactory() throws Exception {
    com.rabbitmq.client.ConnectionFactory factory = new com.rabbitmq.client.ConnectionFactory();
    factory.setUri(RABBIT.uri());

    try (Connection connection = factory.newConnection("txbox-test-uri")) {
      assertThat(connection.isOpen()).isTrue();
      assertThat(factory.getVirtualHost()).isEqualTo("/");
    }
  }

  @Test
  void name_isStableWithinAClassAndDiffersBetweenClasses() {
    assertThat(RABBIT.name("q")).isEqualTo(RABBIT.name("q")).startsWith("q-testrabbitit-")
        .isNotEqualTo(OTHER.name("q"));
  }

  @Test
  void connectionFactory_recoversAutomatically() {
    assertThat(RABBIT.connectionFactory().isAutomaticRecoveryEnabled()).isTrue();
    assertThat(RABBIT.connectionFactory().isTopologyRecoveryEnabled()).isTrue();
    assertThat(RABBIT.uri()).startsWith("amqp");
  }

  @Test
  void afterAll_deletesNamedAndTrackedQueuesAndExchangesAndClosesConnections() throws Exception {
    NamesFixture.declared.clear();

    Fixtures.run(NamesFixture.class).testEvents().assertStatistics(s -> s.succeeded(1));

    assertThat(NamesFixture.declared).hasSize(4);
    assertThat(NamesFixture.connection.isOpen()).isFalse();
    try (Connection connection = RABBIT.newConnection()) {
      assertThatThrownBy(() -> connection.createChannel()
          .queueDeclarePassive(NamesFixture.declared.get(0))).isInstanceOf(IOException.class);
      assertThatThrownBy(() -> connection.createChannel()
          .exchangeDeclarePassive(NamesFixture.declared.get(1))).isInstanceOf(IOException.class);
      assertThatThrownBy(() -> connection.createChannel()
          .queueDeclarePassive(NamesFixture.declared.get(2))).isInstanceOf(IOException.class);
      assertThatThrownBy(() -> connection.createChannel()
          .exchangeDeclarePassive(NamesFixture.declared.get(3))).isInstanceOf(IOException.class);
    }
  }

  /**
   * Stops the node's application, which every client of the node notices: opt in with
   * {@code -Dtxbox.testkit.rabbitFaults=true}.
   */
  @Test
  @EnabledIfSystemProperty(named = "txbox.testkit.rabbitFaults", matches = "true")
  void connection_recoversAfterStopAppAndStartApp() throws Exception {
    String queue = RABBIT.name("survivor");
    try (Connection connection = RABBIT.newConnection()) {
      Channel channel = connection.createChannel();
      channel.queueDeclare(queue, true, false, false, null);

      RABBIT.stopApp();
      RABBIT.startApp();

      await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() -> {
        channel.basicPublish("", queue, null, "again".getBytes(StandardCharsets.UTF_8));
        assertThat(basicGet(channel, queue)).isNotNull();
      });
    }
  }

  private static GetResponse basicGet(Channel channel, String queue) throws IOException {
    return channel.basicGet(queue, true);
  }

  @EnabledIf("io.txbox.testkit.Fixtures#running")
  static class NamesFixture {
    static final List<String> declared = new ArrayList<>();
    static Connection connection;

    @RegisterExtension static final TestRabbit FIXTURE_RABBIT = TestRabbit.perClass();

    @Test
    void declaresAQueueAndAnExchange() throws Exception {
      connection = FIXTURE_RABBIT.newConnection(); // left open on purpose
      Channel channel = connection.createChannel();
      declared.add(channel.queueDeclare(FIXTURE_RABBIT.name("left-queue"), true, false, false,
          null).getQueue());
      String exchange = FIXTURE_RABBIT.name("left-exchange");
      channel.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, true);
      declared.add(exchange);
      // names derived from a named one, as a consumer declares its dead-letter queue and exchange
      declared.add(channel.queueDeclare(FIXTURE_RABBIT.track(exchange + ".dead-letter"), true,
          false, false, null).getQueue());
      String dlx = FIXTURE_RABBIT.track(exchange + "-dlx");
      channel.exchangeDeclare(dlx, BuiltinExchangeType.DIRECT, true);
      declared.add(dlx);
    }
  }
}
