package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.platform.testkit.engine.EventConditions.event;
import static org.junit.platform.testkit.engine.EventConditions.finishedWithFailure;
import static org.junit.platform.testkit.engine.TestExecutionResultConditions.instanceOf;
import static org.junit.platform.testkit.engine.TestExecutionResultConditions.message;

import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.platform.testkit.engine.EngineExecutionResults;

class TestPostgresTest {

  @Test
  void unreachableServer_failsClassQuicklyNamingServiceAddressAndFix() throws IOException {
    long start = System.nanoTime();

    EngineExecutionResults results = Fixtures.run(UnreachableFixture.class);

    Duration took = Duration.ofNanos(System.nanoTime() - start);
    String address = "jdbc:postgresql://127.0.0.1:" + UnreachableFixture.PORT + "/test";
    results.containerEvents().assertThatEvents().haveExactly(1, event(finishedWithFailure(
        instanceOf(TestkitException.class),
        message(m -> m.contains("PostgreSQL") && m.contains(address)
            && m.contains("pg_ctlcluster --skip-systemctl-redirect")))));
    assertThat(took).isLessThan(Duration.ofSeconds(5));
  }

  @Test
  void withCurrentSchema_addsOrReplacesTheParameter() {
    assertThat(TestPostgres.withCurrentSchema("jdbc:postgresql://h/db", "s1"))
        .isEqualTo("jdbc:postgresql://h/db?currentSchema=s1");
    assertThat(TestPostgres.withCurrentSchema("jdbc:postgresql://h/db?ssl=false", "s1"))
        .isEqualTo("jdbc:postgresql://h/db?ssl=false&currentSchema=s1");
    assertThat(TestPostgres.withCurrentSchema(
        "jdbc:postgresql://h/db?currentSchema=old&ssl=false", "s1"))
        .isEqualTo("jdbc:postgresql://h/db?ssl=false&currentSchema=s1");
  }

  @Test
  void builder_rejectsBadSettingsNamingTheValue() {
    assertThatThrownBy(() -> TestPostgres.builder().poolSize(0))
        .hasMessageContaining("poolSize").hasMessageContaining("0");
    assertThatThrownBy(() -> TestPostgres.builder().jdbcUrl("jdbc:mysql://h/db"))
        .hasMessageContaining("jdbc:mysql://h/db");
    assertThatThrownBy(() -> TestPostgres.builder().connectTimeout(Duration.ofMinutes(5)))
        .hasMessageContaining("connectTimeout");
  }

  @Test
  void accessors_beforeBeforeAll_explainHowToRegister() {
    assertThatThrownBy(() -> TestPostgres.perClass().schema())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("static @RegisterExtension");
  }

  @EnabledIf("io.txbox.testkit.Fixtures#running")
  static class UnreachableFixture {
    static final int PORT = Fixtures.closedPort();

    @RegisterExtension
    static final TestPostgres PG = TestPostgres.builder()
        .jdbcUrl("jdbc:postgresql://127.0.0.1:" + PORT + "/test")
        .build();

    @Test
    void neverRuns() {}
  }
}
