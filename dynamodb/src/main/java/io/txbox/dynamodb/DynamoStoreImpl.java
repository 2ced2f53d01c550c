package io.txbox.dynamodb;

import io.txbox.internal.StoredHeaders;
import static io.txbox.dynamodb.Items.ATTEMPTS;
import static io.txbox.dynamodb.Items.COMPLETED;
import static io.txbox.dynamodb.Items.CONSUMER;
import static io.txbox.dynamodb.Items.DEAD;
import static io.txbox.dynamodb.Items.ERROR;
import static io.txbox.dynamodb.Items.EXPIRES;
import static io.txbox.dynamodb.Items.FAILED;
import static io.txbox.dynamodb.Items.FINGERPRINT;
import static io.txbox.dynamodb.Items.HEADERS;
import static io.txbox.dynamodb.Items.KEY;
import static io.txbox.dynamodb.Items.LEASE_UNTIL;
import static io.txbox.dynamodb.Items.PK;
import static io.txbox.dynamodb.Items.PROCESSING;
import static io.txbox.dynamodb.Items.RECEIVED_AT;
import static io.txbox.dynamodb.Items.RESULT;
import static io.txbox.dynamodb.Items.RESULT_STATUS;
import static io.txbox.dynamodb.Items.STATE;
import static io.txbox.dynamodb.Items.TENANT;
import static io.txbox.dynamodb.Items.TOKEN;
import static io.txbox.dynamodb.Items.b;
import static io.txbox.dynamodb.Items.n;
import static io.txbox.dynamodb.Items.s;

import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.Texts;
import io.txbox.TxboxException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.DeadEntry;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.KeyReuseException;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.internal.KeyValueStore;
import io.txbox.internal.Args;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;
import software.amazon.awssdk.services.dynamodb.model.ScanResponse;
import software.amazon.awssdk.services.dynamodb.model.Update;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;

/** {@link DynamoStore} on a {@link DynamoDbClient}; every write is conditional. */
final class DynamoStoreImpl extends KeyValueStore<String> implements DynamoStore {
    /** Claims that lose this many races in a row to other claimants give up with a RetryableException. */
    private static final int MAX_ROUNDS = 16;
    private static final Pattern NAME_REF = Pattern.compile("#(\\w+)");
    private static final String FENCE = "#st = :p AND #tk = :tk AND #lu = :lu";

    private final DynamoDbClient client;
    private final String table;
    private final long leaseMs;
    private final long marginMs;
    private final long retentionMs;
    private final Clock clock;
    private final Calls calls;
    private final AtomicProcess atomic;

    DynamoStoreImpl(DynamoStore.Builder b) {
        super(LoggerFactory.getLogger(DynamoStore.class), b.options);
        this.client = Objects.requireNonNull(b.client);
        this.table = b.table;
        this.leaseMs = b.options.leaseMillis();
        this.marginMs = b.clockSkewMargin.toMillis();
        this.retentionMs = b.options.retentionMillis();
        this.clock = b.clock;
        this.calls = new Calls(consumer, table, b.throttleRetries, Thread::sleep);
        this.atomic = new AtomicProcess(this, client, table, calls);
    }

    @Override
    public Claim claim(InboundMessage message) {
        return claimed(message).claim();
    }

    /** A claim and the key's attempts with it (for ACQUIRED, this one included). */
    record Claimed(Claim claim, int attempts) {}

    Claimed claimed(InboundMessage message) {
        Args.notNull(message, "message");
        String key = message.key();
        String tenant = message.tenant();
        String pk = entry(key, tenant);
        byte[] fp = fingerprint.of(message);
        for (int round = 0; round < MAX_ROUNDS; round++) {
            long now = clock.millis();
            Claimed created = calls.run("claim", key, () -> create(pk, key, tenant, fp, now));
            if (created != null) {
                return created;
            }
            Map<String, AttributeValue> item = read("claim", key, pk);
            if (item == null) {
                continue; // expired or deleted between the two calls: create it again
            }
            Claimed claim = decide(item, pk, key, tenant, fp, now);
            if (claim != null) {
                return claim;
            }
        }
        throw new RetryableException("dynamodb store claim for consumer " + Texts.quote(consumer) + " key "
                + Texts.quote(key) + " lost " + MAX_ROUNDS + " races in a row to other claimants; call it again", null);
    }

    /** Puts a new entry if the key has none: ACQUIRED, or null when the key is stored already. */
    private @Nullable Claimed create(String pk, String key, @Nullable String tenant, byte @Nullable [] fp, long now) {
        long until = now + leaseMs;
        Map<String, AttributeValue> item = new HashMap<>();
        item.put(PK, s(pk));
        item.put(STATE, s(PROCESSING));
        item.put(ATTEMPTS, n(1));
        item.put(TOKEN, n(1));
        item.put(LEASE_UNTIL, n(until));
        item.put(RECEIVED_AT, n(now));
        item.put(CONSUMER, s(consumer));
        item.put(KEY, s(key));
        item.put(EXPIRES, n(processingExpiry(now)));
        if (tenant != null) {
            item.put(TENANT, s(tenant));
        }
        if (fp != null) {
            item.put(FINGERPRINT, b(fp));
        }
        try {
            client.putItem(r -> r.tableName(table).item(item).conditionExpression("attribute_not_exists(#pk)")
                    .expressionAttributeNames(Map.of("#pk", PK)));
        } catch (ConditionalCheckFailedException e) {
            return null;
        }
        debug(key, "claimed with fencing token 1");
        return new Claimed(Claim.of(consumer, key, tenant, Claim.Status.ACQUIRED, 1, Instant.ofEpochMilli(until), null,
                null, null, null), 1);
    }

    /** What a stored entry means for a claim at {@code now}; null when another claimant changed it first. */
    private @Nullable Claimed decide(Map<String, AttributeValue> item, String pk, String key, @Nullable String tenant,
            byte @Nullable [] fp, long now) {
        byte[] storedFp = Items.bytes(item, FINGERPRINT);
        if (storedFp != null && fp != null && !Arrays.equals(storedFp, fp)) {
            log.warn("{} - key {} reused with a different payload fingerprint; refused", consumer, Texts.quote(key));
            throw new KeyReuseException(consumer, key, tenant);
        }
        String state = String.valueOf(Items.string(item, STATE));
        int attempts = (int) Items.number(item, ATTEMPTS);
        long token = Items.number(item, TOKEN);
        switch (state) {
            case COMPLETED: {
                AttributeValue rs = item.get(RESULT_STATUS);
                Integer resultStatus = rs == null ? null : Integer.valueOf(rs.n());
                return new Claimed(Claim.of(consumer, key, tenant, Claim.Status.DUPLICATE, attempts, null,
                        Items.bytes(item, RESULT), resultStatus, StoredHeaders.decode(Items.bytes(item, HEADERS)), null),
                        attempts);
            }
            case DEAD: {
                String reason = Items.string(item, ERROR);
                log.warn("{} - key {} is DEAD: {}", consumer, Texts.quote(key), reason);
                return new Claimed(Claim.of(consumer, key, tenant, Claim.Status.DEAD, attempts, null, null, null, null,
                        reason), attempts);
            }
            case PROCESSING: {
                long until = Items.number(item, LEASE_UNTIL);
                if (now <= until + marginMs) {
                    return new Claimed(Claim.of(consumer, key, tenant, Claim.Status.IN_FLIGHT, attempts, null, null,
                            null, null, null), attempts);
                }
                if (attempts >= maxAttempts) {
                    String last = Items.string(item, ERROR);
                    String reason = "lease expired on attempt " + attempts + " of " + maxAttempts + "; last error: "
                            + (last == null ? "none" : last);
                    boolean dead = calls.run("claim", key, () -> update(UpdateItemRequest.builder()
                            .updateExpression("SET #st = :d, #err = :err REMOVE #lu, #exp")
                            .conditionExpression("#st = :p AND #tk = :tk"),
                            Map.of(":d", s(DEAD), ":err", s(reason), ":p", s(PROCESSING), ":tk", n(token)), pk) != null);
                    if (!dead) {
                        return null;
                    }
                    log.error("{} - key {} is DEAD: {}; parked for an operator", consumer, Texts.quote(key), reason);
                    return new Claimed(Claim.of(consumer, key, tenant, Claim.Status.DEAD, attempts, null, null, null,
                            null, reason), attempts);
                }
                return takeOver(pk, key, tenant, fp, storedFp, state, attempts, token, now);
            }
            case FAILED:
                return takeOver(pk, key, tenant, fp, storedFp, state, attempts, token, now);
            default:
                throw new TxboxException("DynamoDB item " + Texts.quote(pk) + " of table " + Texts.quote(table)
                        + " has unknown state " + Texts.quote(state) + "; it was not written by this store");
        }
    }

    private @Nullable Claimed takeOver(String pk, String key, @Nullable String tenant, byte @Nullable [] fp,
            byte @Nullable [] storedFp, String state, int attempts, long token, long now) {
        if (token >= Integer.MAX_VALUE) {
            throw new TxboxException("the fencing token of key " + Texts.quote(key) + " of consumer "
                    + Texts.quote(consumer) + " reached 2^31-1; delete its item only once no claim is in flight");
        }
        long until = now + leaseMs;
        Map<String, AttributeValue> values = new HashMap<>();
        values.put(":p", s(PROCESSING));
        values.put(":a", n(attempts + 1));
        values.put(":tk1", n(token + 1));
        values.put(":lu", n(until));
        values.put(":exp", n(processingExpiry(now)));
        values.put(":old", s(state));
        values.put(":tk", n(token));
        String set = "SET #st = :p, #at = :a, #tk = :tk1, #lu = :lu, #exp = :exp";
        if (storedFp == null && fp != null) {
            set += ", #fp = :fp";
            values.put(":fp", b(fp));
        }
        String expression = set;
        boolean taken = calls.run("claim", key, () -> update(UpdateItemRequest.builder().updateExpression(expression)
                .conditionExpression("#st = :old AND #tk = :tk"), values, pk) != null);
        if (!taken) {
            return null;
        }
        debug(key, "claimed with fencing token " + (token + 1));
        return new Claimed(Claim.of(consumer, key, tenant, Claim.Status.ACQUIRED, (int) (token + 1),
                Instant.ofEpochMilli(until), null, null, null, null), attempts + 1);
    }

    @Override
    protected String entry(String key, @Nullable String tenant) {
        return Items.pk(consumer, key, tenant);
    }

    @Override
    protected boolean writeCompleted(String pk, Claim claim, byte @Nullable [] result,
            @Nullable Integer resultStatus, @Nullable Map<String, List<String>> headers) {
        Completion c = completion(pk, claim, result, resultStatus, headers);
        return calls.run("complete", claim.key(), () -> update(UpdateItemRequest.builder()
                .updateExpression(c.expression()).conditionExpression(FENCE), c.values(), pk) != null);
    }

    /** The completion of {@code claim} with {@code result} as one write of a transaction, fenced like {@link #complete}. */
    Update completionWrite(Claim claim, byte @Nullable [] result) {
        checkResult(claim, result);
        String pk = entry(claim.key(), claim.tenant());
        Completion c = completion(pk, claim, result, null, null);
        return Update.builder().tableName(table).key(Map.of(PK, s(pk))).updateExpression(c.expression())
                .conditionExpression(FENCE).expressionAttributeNames(names(c.expression(), FENCE))
                .expressionAttributeValues(c.values()).build();
    }

    /** An update that completes an entry: its update expression and the values its expressions use. */
    private record Completion(String expression, Map<String, AttributeValue> values) {}

    private Completion completion(String pk, Claim claim, byte @Nullable [] result, @Nullable Integer resultStatus,
            @Nullable Map<String, List<String>> headers) {
        byte[] encoded = StoredHeaders.encode(headers);
        long size = Items.completedSize(pk, consumer, claim.key(), claim.tenant(), 64,
                result == null ? 0 : result.length, encoded.length);
        if (size > MAX_ITEM_BYTES) {
            throw new InvalidInputException("result for key " + Texts.quote(claim.key()) + " with its headers makes"
                    + " an item of up to " + size + " bytes, more than DynamoDB's item limit of " + MAX_ITEM_BYTES
                    + " bytes; store a smaller result or headers");
        }
        Map<String, AttributeValue> values = fence(claim);
        values.put(":c", s(COMPLETED));
        values.put(":exp", n(expiry(clock.millis())));
        StringBuilder set = new StringBuilder("SET #st = :c, #exp = :exp");
        List<String> remove = new ArrayList<>(List.of("#lu", "#err"));
        if (result != null) {
            set.append(", #res = :res");
            values.put(":res", b(result));
        } else {
            remove.add("#res");
        }
        if (resultStatus != null) {
            set.append(", #rs = :rs");
            values.put(":rs", n(resultStatus));
        } else {
            remove.add("#rs");
        }
        if (encoded.length > 0) {
            set.append(", #hd = :hd");
            values.put(":hd", b(encoded));
        } else {
            remove.add("#hd");
        }
        String expression = set + " REMOVE " + String.join(", ", remove);
        return new Completion(expression, values);
    }

    @Override
    protected @Nullable Failure writeFailed(String pk, Claim claim, String reason) {
        long now = clock.millis();
        Map<String, AttributeValue> values = fence(claim);
        values.put(":f", s(FAILED));
        values.put(":err", s(reason));
        values.put(":exp", n(expiry(now)));
        values.put(":max", n(maxAttempts));
        Map<String, AttributeValue> failed = calls.run("fail", claim.key(), () -> update(UpdateItemRequest.builder()
                .updateExpression("SET #st = :f, #err = :err, #exp = :exp REMOVE #lu")
                .conditionExpression(FENCE + " AND #at < :max"), values, pk));
        boolean dead = false;
        if (failed == null) {
            values.remove(":f");
            values.remove(":exp");
            values.put(":d", s(DEAD));
            failed = calls.run("fail", claim.key(), () -> update(UpdateItemRequest.builder()
                    .updateExpression("SET #st = :d, #err = :err REMOVE #lu, #exp")
                    .conditionExpression(FENCE + " AND #at >= :max"), values, pk));
            if (failed == null) {
                return null;
            }
            dead = true;
        }
        return new Failure((int) Items.number(failed, ATTEMPTS), dead);
    }

    @Override
    protected boolean writeReleased(String pk, Claim claim) {
        Map<String, AttributeValue> values = fence(claim);
        values.put(":f", s(FAILED));
        values.put(":one", n(1));
        values.put(":exp", n(expiry(clock.millis())));
        return calls.run("release", claim.key(), () -> update(UpdateItemRequest.builder()
                .updateExpression("SET #st = :f, #at = #at - :one, #exp = :exp REMOVE #lu")
                .conditionExpression(FENCE), values, pk) != null);
    }

    @Override
    public Outcome process(InboundMessage message, DynamoHandler handler) {
        return atomic.process(message, handler);
    }

    /** The entry of {@code claim} as it is now (a strongly consistent read), or null if there is none. */
    @Nullable Map<String, AttributeValue> stored(Claim claim) {
        return read("read", claim.key(), entry(claim.key(), claim.tenant()));
    }

    /** The item {@code pk}, read strongly consistent, or null if there is none. */
    private @Nullable Map<String, AttributeValue> read(String action, String key, String pk) {
        GetItemResponse read = calls.run(action, key,
                () -> client.getItem(r -> r.tableName(table).key(Map.of(PK, s(pk))).consistentRead(true)));
        return read.hasItem() && !read.item().isEmpty() ? read.item() : null;
    }

    @Override
    protected boolean writeResetDead(String pk, String key) {
        Map<String, AttributeValue> values = Map.of(":d", s(DEAD), ":f", s(FAILED), ":zero", n(0), ":exp",
                n(expiry(clock.millis())));
        return calls.run("reset dead", key, () -> update(UpdateItemRequest.builder()
                .updateExpression("SET #st = :f, #at = :zero, #exp = :exp").conditionExpression("#st = :d"),
                values, pk) != null);
    }

    @Override
    public List<DeadEntry> listDead(int limit) {
        if (limit < 1 || limit > 10_000) {
            throw new InvalidInputException("limit must be between 1 and 10000, but was " + limit);
        }
        List<DeadEntry> dead = new ArrayList<>();
        Map<String, AttributeValue> start = null;
        do {
            Map<String, AttributeValue> from = start;
            ScanResponse page = calls.run("list dead", "*", () -> client.scan(r -> r.tableName(table)
                    .filterExpression("#con = :con AND #st = :d")
                    .expressionAttributeNames(Map.of("#con", CONSUMER, "#st", STATE))
                    .expressionAttributeValues(Map.of(":con", s(consumer), ":d", s(DEAD)))
                    .exclusiveStartKey(from)));
            for (Map<String, AttributeValue> item : page.items()) {
                if (dead.size() == limit) {
                    break;
                }
                dead.add(new DeadEntry(String.valueOf(Items.string(item, KEY)), Items.string(item, TENANT),
                        (int) Items.number(item, ATTEMPTS), Items.string(item, ERROR),
                        Instant.ofEpochMilli(Items.number(item, RECEIVED_AT))));
            }
            start = page.hasLastEvaluatedKey() && !page.lastEvaluatedKey().isEmpty() ? page.lastEvaluatedKey() : null;
        } while (start != null && dead.size() < limit);
        return dead;
    }

    /**
     * Runs a conditional update of the item {@code pk}, naming every {@code #attribute} its
     * expressions use: the item after the update, or null when the condition failed.
     */
    private @Nullable Map<String, AttributeValue> update(UpdateItemRequest.Builder request,
            Map<String, AttributeValue> values, String pk) {
        UpdateItemRequest partial = request.build();
        Map<String, String> names = names(partial.updateExpression(), partial.conditionExpression());
        try {
            return client.updateItem(request.tableName(table).key(Map.of(PK, s(pk))).expressionAttributeNames(names)
                    .expressionAttributeValues(values).returnValues(ReturnValue.ALL_NEW).build()).attributes();
        } catch (ConditionalCheckFailedException e) {
            return null;
        }
    }

    /** Every {@code #attribute} the expressions use, mapped to its name. */
    private static Map<String, String> names(@Nullable String... expressions) {
        Map<String, String> names = new LinkedHashMap<>();
        for (String expression : expressions) {
            Matcher m = NAME_REF.matcher(expression == null ? "" : expression);
            while (m.find()) {
                names.put("#" + m.group(1), attribute(m.group(1)));
            }
        }
        return names;
    }

    private static String attribute(String ref) {
        return switch (ref) {
            case "exp" -> EXPIRES;
            case "pk" -> PK;
            default -> ref;
        };
    }

    private Map<String, AttributeValue> fence(Claim claim) {
        Instant until = claim.leaseUntil();
        Map<String, AttributeValue> values = new HashMap<>();
        values.put(":p", s(PROCESSING));
        values.put(":tk", n(claim.fencingToken()));
        values.put(":lu", n(until == null ? -1 : until.toEpochMilli()));
        return values;
    }

    private long processingExpiry(long now) {
        return expiry(now + leaseMs + marginMs);
    }

    /** Epoch seconds {@code retention} after {@code fromMillis}, rounded up. */
    private long expiry(long fromMillis) {
        return (fromMillis + retentionMs + 999) / 1000;
    }
}
