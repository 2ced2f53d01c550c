package io.txbox.inbox.consumer.internal;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.consumer.KeyPolicy;
import io.txbox.internal.KeyRules;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a consumer reads a {@link Delivery}: its idempotency key under the {@link KeyPolicy}, the
 * message the inbox gets, and its ordering key when the consumer parks keys.
 */
final class DeliveryKeys {
    private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

    private final String consumer;
    private final String keyHeader;
    private final KeyPolicy keyPolicy;
    private final boolean parkKeys;

    DeliveryKeys(String consumer, String keyHeader, KeyPolicy keyPolicy, boolean parkKeys) {
        this.consumer = consumer;
        this.keyHeader = keyHeader;
        this.keyPolicy = keyPolicy;
        this.parkKeys = parkKeys;
    }

    /** The delivery's idempotency key; {@code null} when it has none the policy accepts. */
    @Nullable String resolve(Delivery delivery) {
        byte[] raw = delivery.key();
        if (raw != null) {
            try {
                return KeyRules.decode(keyWhat(), raw);
            } catch (InvalidInputException e) {
                // falls through to the policy
            }
        }
        if (keyPolicy == KeyPolicy.TRANSPORT_COORDINATES && delivery.transportKey() != null) {
            log.debug("{} - {}: no usable key header, keyed by transport coordinates", consumer,
                    delivery.coordinates());
            return delivery.transportKey();
        }
        return null;
    }

    /** Why {@link #resolve} found no key, for the dead letter. */
    String problem(Delivery delivery) {
        byte[] raw = delivery.key();
        if (raw == null) {
            return keyWhat() + " is missing";
        }
        try {
            KeyRules.decode(keyWhat(), raw);
            return keyWhat() + " was refused";
        } catch (InvalidInputException e) {
            return String.valueOf(e.getMessage());
        }
    }

    InboundMessage message(Delivery delivery, String key) {
        return new InboundMessage(key, delivery.payload(), delivery.headers(), null, delivery.redelivered());
    }

    /** The delivery's ordering key when this consumer parks keys; {@code null} otherwise. */
    @Nullable String orderingKey(Delivery delivery) {
        return parkKeys ? Parking.orderingKey(delivery.orderingKey()) : null;
    }

    String keyHeader() {
        return keyHeader;
    }

    KeyPolicy keyPolicy() {
        return keyPolicy;
    }

    private String keyWhat() {
        return "idempotency key header " + Texts.quote(keyHeader);
    }
}
