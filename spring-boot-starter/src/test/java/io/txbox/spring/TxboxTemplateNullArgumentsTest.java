package io.txbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxException;
import io.txbox.inbox.Handler;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.outbox.Outbox;
import io.txbox.outbox.OutboxMessage;
import io.txbox.outbox.StepKey;
import io.txbox.testkit.NullArguments;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.transaction.PlatformTransactionManager;

/** {@link TxboxTemplate} refuses a null argument naming it, before it touches a transaction or a connection. */
class TxboxTemplateNullArgumentsTest {
    private static final Map<Class<?>, Object> SAMPLES = Map.of(
            DataSource.class, NullArguments.untouchable(DataSource.class),
            PlatformTransactionManager.class, NullArguments.untouchable(PlatformTransactionManager.class),
            Outbox.class, NullArguments.untouchable(Outbox.class),
            Inbox.class, NullArguments.untouchable(Inbox.class),
            InboundMessage.class, InboundMessage.of("k", new byte[] {1}),
            OutboxMessage.class, OutboxMessage.builder(StepKey.of("k", "s"), "d").payload(new byte[0]).build(),
            List.class, List.of(),
            byte[].class, new byte[0],
            Handler.class, (Handler) (tx, m) -> null);

    @Test
    void template_nullArgument_isRefusedNamingTheParameter() {
        TxboxTemplate template = new TxboxTemplate(NullArguments.untouchable(DataSource.class),
                NullArguments.untouchable(PlatformTransactionManager.class), NullArguments.untouchable(Outbox.class),
                NullArguments.untouchable(Inbox.class));
        NullArguments check = NullArguments.expecting(TxboxException.class, SAMPLES::get, Set.of())
                .methods(TxboxTemplate.class, template)
                .constructors(TxboxTemplate.class);
        assertThat(check.problems()).isEmpty();
        assertThat(check.checked()).isGreaterThanOrEqualTo(10);
    }
}
