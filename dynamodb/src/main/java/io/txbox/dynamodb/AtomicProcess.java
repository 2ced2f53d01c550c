package io.txbox.dynamodb;

import static io.txbox.dynamodb.Items.COMPLETED;
import static io.txbox.dynamodb.Items.PK;
import static io.txbox.dynamodb.Items.STATE;
import static io.txbox.dynamodb.Items.TOKEN;

import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.Texts;
import io.txbox.inbox.Claim;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.Outcome;
import io.txbox.internal.Args;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.CancellationReason;
import software.amazon.awssdk.services.dynamodb.model.TransactWriteItem;
import software.amazon.awssdk.services.dynamodb.model.TransactionCanceledException;

/**
 * {@link DynamoStore#process}: a claim, the handler, then the entry's completion and the
 * handler's writes in one {@code TransactWriteItems} fenced by the claim.
 */
final class AtomicProcess {
    private static final Logger log = LoggerFactory.getLogger(DynamoStore.class);
    /** Cancellation codes that say nothing of the writes themselves: the same transaction may commit later. */
    private static final Set<String> TRANSIENT = Set.of("TransactionConflict", "ThrottlingError",
            "ProvisionedThroughputExceeded", "RequestLimitExceeded", "TransactionInProgress");
    private static final String CONDITION_FAILED = "ConditionalCheckFailed";

    private final DynamoStoreImpl store;
    private final DynamoDbClient client;
    private final String table;
    private final Calls calls;

    AtomicProcess(DynamoStoreImpl store, DynamoDbClient client, String table, Calls calls) {
        this.store = store;
        this.client = client;
        this.table = table;
        this.calls = calls;
    }

    Outcome process(InboundMessage message, DynamoHandler handler) {
        Args.notNull(message, "message");
        Args.notNull(handler, "handler");
        DynamoStoreImpl.Claimed claimed;
        try {
            claimed = store.claimed(message);
        } catch (KeyReuseException e) {
            return new Outcome(Outcome.Status.KEY_REUSED, null, 0, e.getMessage(), null);
        }
        Claim claim = claimed.claim();
        int attempts = claimed.attempts();
        switch (claim.status()) {
            case DUPLICATE:
                return new Outcome(Outcome.Status.DUPLICATE, claim.result(), attempts, null, null);
            case DEAD:
                return new Outcome(Outcome.Status.DEAD, null, attempts, claim.reason(), null);
            case IN_FLIGHT:
                return new Outcome(Outcome.Status.IN_FLIGHT, null, attempts, null, null);
            default:
                break;
        }
        List<TransactWriteItem> writes = new ArrayList<>();
        byte[] result;
        try {
            result = handler.handle(message, writes);
        } catch (Exception e) {
            return store.fail(claim, e);
        }
        List<TransactWriteItem> items;
        try {
            items = transaction(claim, writes, result);
        } catch (InvalidInputException e) {
            store.release(claim);
            throw e;
        }
        // one token for the SDK's own retries of this call, so DynamoDB applies it at most once
        String token = UUID.randomUUID().toString();
        TransactionCanceledException cancelled = calls.run("process", claim.key(), () -> {
            try {
                client.transactWriteItems(r -> r.transactItems(items).clientRequestToken(token));
                return null;
            } catch (TransactionCanceledException e) {
                return e;
            }
        });
        if (cancelled == null) {
            if (log.isDebugEnabled()) {
                log.debug("{} - key {} processed with {} writes in one transaction", store.consumer(),
                        Texts.quote(claim.key()), writes.size());
            }
            return new Outcome(Outcome.Status.PROCESSED, result, attempts, null, null);
        }
        return cancelled(claim, attempts, cancelled, result);
    }

    /** The entry's completion first, then the handler's writes; refuses what DynamoDB would refuse for the store. */
    private List<TransactWriteItem> transaction(Claim claim, List<TransactWriteItem> writes, byte @Nullable [] result) {
        if (writes.size() > DynamoStore.MAX_TRANSACTION_WRITES) {
            throw new InvalidInputException("the handler of key " + Texts.quote(claim.key()) + " added "
                    + writes.size() + " writes; a transaction holds at most " + DynamoStore.MAX_TRANSACTION_WRITES
                    + " besides the message's entry: split the work, or use claim and complete");
        }
        Map<String, AttributeValue> entryKey = Map.of(PK, Items.s(Items.pk(store.consumer(), claim.key(),
                claim.tenant())));
        List<TransactWriteItem> items = new ArrayList<>(writes.size() + 1);
        items.add(TransactWriteItem.builder().update(store.completionWrite(claim, result)).build());
        for (int i = 0; i < writes.size(); i++) {
            TransactWriteItem w = writes.get(i);
            if (w == null) {
                throw new InvalidInputException("writes[" + i + "] of key " + Texts.quote(claim.key()) + " is null");
            }
            if (table.equals(tableOf(w)) && entryKey.equals(keyOf(w))) {
                throw new InvalidInputException("writes[" + i + "] of key " + Texts.quote(claim.key())
                        + " addresses the store's own entry for the message in table " + Texts.quote(table)
                        + "; the store writes it itself");
            }
            items.add(w);
        }
        return items;
    }

    private Outcome cancelled(Claim claim, int attempts, TransactionCanceledException e, byte @Nullable [] result) {
        List<String> codes = e.hasCancellationReasons()
                ? e.cancellationReasons().stream().map(CancellationReason::code).map(String::valueOf).toList()
                : List.of();
        String entry = codes.isEmpty() ? "" : codes.get(0);
        if (CONDITION_FAILED.equals(entry)) {
            Map<String, AttributeValue> now = store.stored(claim);
            if (now != null && COMPLETED.equals(Items.string(now, STATE))
                    && Items.number(now, TOKEN) == claim.fencingToken()) {
                return new Outcome(Outcome.Status.PROCESSED, result, attempts, null, null); // our own commit, sent again
            }
            log.warn("{} - key {} lost its claim (fencing token {}) while the handler ran; its transaction wrote"
                    + " nothing", store.consumer(), Texts.quote(claim.key()), claim.fencingToken());
            throw new LeaseLostException(store.consumer(), claim.key(), claim.fencingToken());
        }
        if (codes.stream().anyMatch(TRANSIENT::contains) && codes.stream().skip(1).noneMatch(CONDITION_FAILED::equals)) {
            store.release(claim);
            throw new RetryableException("dynamodb store process for consumer " + Texts.quote(store.consumer())
                    + " key " + Texts.quote(claim.key()) + ": DynamoDB cancelled the transaction " + codes
                    + " and wrote nothing; deliver the message again", e);
        }
        return store.fail(claim, e); // a write's condition failed or a write was invalid: the handler's attempt failed
    }

    private static @Nullable String tableOf(TransactWriteItem w) {
        if (w.put() != null) {
            return w.put().tableName();
        }
        if (w.update() != null) {
            return w.update().tableName();
        }
        if (w.delete() != null) {
            return w.delete().tableName();
        }
        return w.conditionCheck() == null ? null : w.conditionCheck().tableName();
    }

    private static @Nullable Map<String, AttributeValue> keyOf(TransactWriteItem w) {
        if (w.put() != null) {
            AttributeValue pk = w.put().item().get(PK);
            return pk == null ? null : Map.of(PK, pk);
        }
        if (w.update() != null) {
            return w.update().key();
        }
        if (w.delete() != null) {
            return w.delete().key();
        }
        return w.conditionCheck() == null ? null : w.conditionCheck().key();
    }
}
