package io.txbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class NamesTest {

  @Test
  void schemaName_isLowerCaseIdentifierWithClassHint() {
    String name = Names.schemaName("OrderSagaIT");

    assertThat(name).matches("t_ordersagait_[a-z0-9]{8}");
  }

  @Test
  void schemaName_longHint_fitsPostgresIdentifierLimit() {
    String name = Names.schemaName("A".repeat(200) + "Very$Long.Name");

    assertThat(name).hasSizeLessThanOrEqualTo(63).matches("t_a+_[a-z0-9]{8}");
  }

  @Test
  void schemaName_hintWithoutUsableCharacters_stillValid() {
    assertThat(Names.schemaName("$$$")).matches("t_x_[a-z0-9]{8}");
  }

  @Test
  void schemaName_twoCallsSameHint_differ() {
    assertThat(Names.schemaName("same")).isNotEqualTo(Names.schemaName("same"));
  }

  @Test
  void topicName_replacesCharactersKafkaRejects() {
    assertThat(Names.topicName("orders/created v1")).matches("orders-created-v1-[a-z0-9]{8}");
  }

  @Test
  void classId_isShortLowerCase() {
    assertThat(Names.classId(NamesTest.class)).matches("namestest-[a-z0-9]{6}");
  }
}
