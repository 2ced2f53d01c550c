package io.txbox.dynamodb;

import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.TxboxException;
import java.util.List;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeDefinition;
import software.amazon.awssdk.services.dynamodb.model.BillingMode;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.KeySchemaElement;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.ResourceInUseException;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;
import software.amazon.awssdk.services.dynamodb.model.ScalarAttributeType;
import software.amazon.awssdk.services.dynamodb.model.TableDescription;
import software.amazon.awssdk.services.dynamodb.model.TableStatus;
import software.amazon.awssdk.services.dynamodb.model.TimeToLiveStatus;

/** The table the store needs: creating it, and checking one before a store uses it. */
final class Tables {
    private static final Logger log = LoggerFactory.getLogger(DynamoStore.class);
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{3,255}");

    private Tables() {}

    static String checkName(String table) {
        if (table == null || !NAME.matcher(table).matches()) {
            throw new ConfigException("table must be 3 to 255 characters from A-Z a-z 0-9 _ . -, but was "
                    + Texts.quote(table));
        }
        return table;
    }

    static void create(DynamoDbClient client, String table) {
        if (client == null) {
            throw new ConfigException("client must not be null");
        }
        checkName(table);
        try {
            client.createTable(r -> r.tableName(table)
                    .keySchema(KeySchemaElement.builder().attributeName(DynamoStore.KEY_ATTRIBUTE)
                            .keyType(KeyType.HASH).build())
                    .attributeDefinitions(AttributeDefinition.builder().attributeName(DynamoStore.KEY_ATTRIBUTE)
                            .attributeType(ScalarAttributeType.S).build())
                    .billingMode(BillingMode.PAY_PER_REQUEST));
            log.info("created DynamoDB table {}", Texts.quote(table));
        } catch (ResourceInUseException e) {
            log.info("DynamoDB table {} exists already; left as it is", Texts.quote(table));
            return;
        } catch (SdkException e) {
            throw new TxboxException("could not create DynamoDB table " + Texts.quote(table) + ": " + e.getMessage(), e);
        }
        try {
            client.waiter().waitUntilTableExists(r -> r.tableName(table));
        } catch (SdkException e) {
            throw new TxboxException("DynamoDB table " + Texts.quote(table) + " did not become active: "
                    + e.getMessage(), e);
        }
        try {
            client.updateTimeToLive(r -> r.tableName(table).timeToLiveSpecification(
                    t -> t.attributeName(DynamoStore.TTL_ATTRIBUTE).enabled(true)));
        } catch (DynamoDbException e) {
            if (isUnknownOperation(e)) {
                log.warn("the DynamoDB server does not implement UpdateTimeToLive; entries of table {} will never"
                        + " expire there", Texts.quote(table));
                return;
            }
            throw new TxboxException("could not enable TTL on attribute " + DynamoStore.TTL_ATTRIBUTE + " of table "
                    + Texts.quote(table) + ": " + e.getMessage(), e);
        } catch (SdkException e) {
            throw new TxboxException("could not enable TTL on attribute " + DynamoStore.TTL_ATTRIBUTE + " of table "
                    + Texts.quote(table) + ": " + e.getMessage(), e);
        }
    }

    private static boolean isUnknownOperation(DynamoDbException e) {
        String code = e.awsErrorDetails() == null ? null : e.awsErrorDetails().errorCode();
        return "UnknownOperationException".equals(code);
    }

    /** Checks that {@code table} exists with the store's key schema; warns if TTL is off. */
    static void check(DynamoDbClient client, String table) {
        String fix = "create it with DynamoStore.createTable(client, " + Texts.quote(table) + ") (partition key "
                + DynamoStore.KEY_ATTRIBUTE + " of type S, no sort key, TTL on " + DynamoStore.TTL_ATTRIBUTE
                + "), or name another table with DynamoStore.Builder.table";
        TableDescription d;
        try {
            d = client.describeTable(r -> r.tableName(table)).table();
        } catch (ResourceNotFoundException e) {
            throw new ConfigException("DynamoDB table " + Texts.quote(table) + " does not exist: " + fix);
        } catch (SdkException e) {
            throw Calls.unreachable("check of table " + Texts.quote(table), e);
        }
        List<KeySchemaElement> keys = d.keySchema();
        boolean keyOk = keys.size() == 1 && keys.get(0).keyType() == KeyType.HASH
                && keys.get(0).attributeName().equals(DynamoStore.KEY_ATTRIBUTE)
                && d.attributeDefinitions().stream().anyMatch(a -> a.attributeName().equals(DynamoStore.KEY_ATTRIBUTE)
                        && a.attributeType() == ScalarAttributeType.S);
        if (!keyOk) {
            throw new ConfigException("DynamoDB table " + Texts.quote(table) + " has key schema " + describe(d)
                    + ", but the store needs a partition key " + DynamoStore.KEY_ATTRIBUTE
                    + " of type S and no sort key: " + fix);
        }
        if (d.tableStatus() != TableStatus.ACTIVE && d.tableStatus() != TableStatus.UPDATING) {
            log.warn("DynamoDB table {} is {}, not ACTIVE; calls fail until it is", Texts.quote(table), d.tableStatus());
        }
        try {
            var ttl = client.describeTimeToLive(r -> r.tableName(table)).timeToLiveDescription();
            boolean on = ttl != null && (ttl.timeToLiveStatus() == TimeToLiveStatus.ENABLED
                    || ttl.timeToLiveStatus() == TimeToLiveStatus.ENABLING)
                    && DynamoStore.TTL_ATTRIBUTE.equals(ttl.attributeName());
            if (!on) {
                log.warn("TTL is not enabled on attribute {} of DynamoDB table {}: completed entries will never be"
                        + " deleted. Enable it (DynamoStore.createTable does, on a new table).",
                        DynamoStore.TTL_ATTRIBUTE, Texts.quote(table));
            }
        } catch (SdkException e) {
            log.warn("could not read the TTL setting of DynamoDB table {}: {}", Texts.quote(table), e.getMessage());
        }
    }

    private static String describe(TableDescription d) {
        StringBuilder s = new StringBuilder("[");
        for (KeySchemaElement k : d.keySchema()) {
            if (s.length() > 1) {
                s.append(", ");
            }
            String type = d.attributeDefinitions().stream().filter(a -> a.attributeName().equals(k.attributeName()))
                    .map(a -> a.attributeTypeAsString()).findFirst().orElse("?");
            s.append(k.attributeName()).append(' ').append(k.keyTypeAsString()).append(' ').append(type);
        }
        return s.append(']').toString();
    }
}
