package io.txbox.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.testkit.NullArguments;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Every public method of the outbox API refuses a null argument with a txbox exception naming
 * the parameter, before any I/O: the connection given beside it fails the test if touched.
 */
class NullArgumentsTest {
    private static final StepKey KEY = StepKey.of("K", "pay");
    private static final OutboxMessage MESSAGE = OutboxMessage.builder(KEY, "payments").payload("{}").build();

    static Object sample(Class<?> type) {
        if (type == Connection.class) {
            return NullArguments.untouchable(Connection.class);
        }
        Map<Class<?>, Object> samples = Map.of(
                OutboxMessage.class, MESSAGE, List.class, List.of(MESSAGE), Runnable.class, (Runnable) () -> {},
                TxboxTables.class, TxboxTables.defaults(), String.class, "x", StepKey.class, KEY,
                byte[].class, new byte[0], Duration.class, Duration.ofSeconds(1), Instant.class, Instant.EPOCH);
        return type == Map.class ? Map.of("x-a", "b") : samples.get(type);
    }

    @Test
    void outboxApi_nullArgument_isRefusedNamingTheParameter() {
        NullArguments check = NullArguments.expecting(TxboxException.class, NullArgumentsTest::sample, Set.of())
                .methods(Outbox.class, Outbox.builder().build())
                .methods(Outbox.Builder.class, Outbox.builder())
                .methods(OutboxMessage.class, MESSAGE)
                .methods(OutboxMessage.Builder.class, OutboxMessage.builder(KEY, "payments"))
                .methods(StepKey.class, KEY)
                .constructors(StepKey.class)
                .methods(Lanes.class, null);
        assertThat(check.problems()).isEmpty();
        assertThat(check.checked()).isGreaterThanOrEqualTo(20);
    }
}
