package io.txbox.inbox.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The ordering key a consumer that parks keys reads from a delivery's raw key bytes. */
class ParkingTest {
    @Test
    void orderingKey_text_isTheTextItself() {
        assertThat(Parking.orderingKey("order-42".getBytes(StandardCharsets.UTF_8))).isEqualTo("order-42");
    }

    @Test
    void orderingKey_none_isNull() {
        assertThat(Parking.orderingKey(null)).isNull();
    }

    @Test
    void orderingKey_overlongOrBinary_isItsSha256_stableAndDistinct() {
        byte[] overlong = "k".repeat(300).getBytes(StandardCharsets.UTF_8);
        byte[] binary = {(byte) 0xff, (byte) 0xfe, 0};

        assertThat(Parking.orderingKey(overlong)).matches("sha256:[0-9a-f]{64}")
                .isEqualTo(Parking.orderingKey(overlong.clone()));
        assertThat(Parking.orderingKey(binary)).matches("sha256:[0-9a-f]{64}")
                .isNotEqualTo(Parking.orderingKey(overlong));
    }
}
