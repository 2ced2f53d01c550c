package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.testkit.NullArguments;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * Every public method of the inbox API (package {@code io.txbox.inbox}) refuses a null argument
 * with a txbox exception naming the parameter, before any I/O: the connection and data source
 * given beside it fail the test if touched.
 */
class NullArgumentsTest {
    private static final Inbox INBOX = Inbox.builder("c").build();
    private static final InboundMessage MESSAGE = InboundMessage.of("k", new byte[] {1});
    private static final Claim CLAIM = new Claim("c", "k", null, Claim.Status.ACQUIRED, 1, Instant.EPOCH, null, null,
            Map.of(), null);

    static Object sample(Class<?> type) {
        Map<Class<?>, Object> samples = new HashMap<>();
        samples.put(Connection.class, NullArguments.untouchable(Connection.class));
        samples.put(DataSource.class, NullArguments.untouchable(DataSource.class));
        samples.put(InboundMessage.class, MESSAGE);
        samples.put(Claim.class, CLAIM);
        samples.put(Handler.class, (Handler) (tx, m) -> null);
        samples.put(Throwable.class, new RuntimeException("boom"));
        samples.put(String.class, "x");
        samples.put(byte[].class, new byte[0]);
        samples.put(Map.class, Map.of());
        samples.put(List.class, List.of());
        samples.put(Duration.class, Duration.ofSeconds(1));
        samples.put(Instant.class, Instant.EPOCH);
        samples.put(Integer.class, 200);
        samples.put(Clock.class, Clock.systemUTC());
        samples.put(TxboxTables.class, TxboxTables.defaults());
        samples.put(Fingerprint.class, Fingerprint.sha256());
        samples.put(InboxListener.class, InboxListener.NONE);
        samples.put(Function.class, Function.identity());
        samples.put(Predicate.class, (Predicate<Object>) o -> true);
        samples.put(Receipt.Status.class, Receipt.Status.FIRST);
        samples.put(Outcome.Status.class, Outcome.Status.PROCESSED);
        samples.put(Claim.Status.class, Claim.Status.ACQUIRED);
        return samples.get(type);
    }

    @Test
    void inboxApi_nullArgument_isRefusedNamingTheParameter() {
        NullArguments check = NullArguments.expecting(TxboxException.class, NullArgumentsTest::sample, Set.of(
                        // documented: a message is built from whatever a broker delivered; the key is
                        // checked when the message is used, a null payload or headers become empty
                        "InboundMessage.new(key)", "InboundMessage.new(payload)", "InboundMessage.new(headers)",
                        "InboundMessage.of(key)", "InboundMessage.of(payload)",
                        "InboundMessage.builder(key)", "InboundMessage.builder(payload)"))
                .methods(Inbox.class, INBOX)
                .methods(Inbox.Builder.class, Inbox.builder("c"))
                .methods(InboundMessage.class, MESSAGE)
                .constructors(InboundMessage.class)
                .methods(InboundMessage.Builder.class, InboundMessage.builder("k", new byte[0]))
                .methods(Claim.class, CLAIM)
                .constructors(Receipt.class)
                .constructors(Outcome.class)
                .constructors(DeadEntry.class)
                .methods(Fingerprint.class, null);
        assertThat(check.problems()).isEmpty();
        assertThat(check.checked()).isGreaterThanOrEqualTo(40);
    }

    @Test
    void receive_nullMessage_namesTheParameterInsteadOfAnNpe() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> INBOX.receive((Connection) sample(Connection.class), null))
                .isInstanceOf(io.txbox.InvalidInputException.class).hasMessage("message must not be null");
    }
}
