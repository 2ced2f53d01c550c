package io.txbox.inbox.consumer.internal;

import io.txbox.inbox.Outcome;
import io.txbox.internal.Args;
import java.time.Duration;

/**
 * What a broker adapter must do with a delivery once {@link DeliveryProcessor} has run it. In
 * every case the database transaction has already ended, so the broker call comes after the
 * commit.
 */
public sealed interface Decision {
    /** The delivery needs no further work (processed now or before): ack it / commit its offset. */
    record Ack(Outcome outcome) implements Decision {
        public Ack {
            Args.notNull(outcome, "outcome");
        }
    }

    /**
     * The delivery failed and may succeed later: deliver it again after {@code delay}, without
     * acking it first, so that nothing is lost if the process dies meanwhile.
     */
    record Retry(Duration delay, String reason) implements Decision {
        public Retry {
            Args.notNull(delay, "delay");
            Args.notNull(reason, "reason");
        }
    }

    /**
     * The delivery can never succeed (dead in the inbox, key reused, missing or malformed key,
     * refused payload): publish it to the dead-letter destination with {@code reason}, and ack it
     * only once the broker confirmed that publish.
     */
    record DeadLetter(String reason) implements Decision {
        public DeadLetter {
            Args.notNull(reason, "reason");
        }
    }
}
