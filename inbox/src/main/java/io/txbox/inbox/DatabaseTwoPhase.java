package io.txbox.inbox;

import io.txbox.internal.Args;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/** An inbox's two-phase mode bound to a {@link DataSource}: {@link Inbox#twoPhase}. */
record DatabaseTwoPhase(Inbox inbox, DataSource ds) implements TwoPhaseStore {
    DatabaseTwoPhase {
        Args.notNull(ds, "ds");
    }

    @Override
    public String consumer() {
        return inbox.consumer();
    }

    @Override
    public Fingerprint fingerprint() {
        return inbox.fingerprint();
    }

    @Override
    public Claim claim(InboundMessage message) {
        return inbox.claim(ds, message);
    }

    @Override
    public void complete(Claim claim, byte @Nullable [] result) {
        inbox.complete(ds, claim, result);
    }

    @Override
    public void complete(Claim claim, int resultStatus, Map<String, List<String>> resultHeaders, byte[] body) {
        inbox.complete(ds, claim, resultStatus, resultHeaders, body);
    }

    @Override
    public Outcome fail(Claim claim, Throwable error) {
        return inbox.fail(ds, claim, error);
    }

    @Override
    public void release(Claim claim) {
        inbox.release(ds, claim);
    }

    @Override
    public ParkedKeys parkedKeys() {
        return inbox.parkedKeys(ds);
    }

    @Override
    public String toString() {
        return "TwoPhaseStore[database inbox " + inbox.consumer() + "]";
    }
}
