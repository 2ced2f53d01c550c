package io.txbox.dynamodb;

import java.util.HashMap;
import java.util.Map;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.ResourceInUseException;
import software.amazon.awssdk.services.dynamodb.model.ScalarAttributeType;

/**
 * The business effects of the consumer tests, counted in a DynamoDB table of their own (item
 * {@code <consumer>|<key>}, attribute {@code n}), so that they outlive a killed consumer process.
 */
final class Effects {
    private final DynamoDbClient client;
    private final String table;

    Effects(DynamoDbClient client, String table) {
        this.client = client;
        this.table = table;
        try {
            client.createTable(r -> r.tableName(table)
                    .keySchema(k -> k.attributeName("id").keyType(KeyType.HASH))
                    .attributeDefinitions(a -> a.attributeName("id").attributeType(ScalarAttributeType.S))
                    .provisionedThroughput(p -> p.readCapacityUnits(5L).writeCapacityUnits(5L)));
        } catch (ResourceInUseException e) {
            // made by the other process
        }
    }

    /** Counts one effect of {@code key}. */
    void record(String consumer, String key) {
        client.updateItem(r -> r.tableName(table).key(Map.of("id", AttributeValue.fromS(consumer + "|" + key)))
                .updateExpression("ADD n :one").expressionAttributeValues(Map.of(":one", AttributeValue.fromN("1"))));
    }

    /** Effects so far by key. */
    Map<String, Integer> byKey(String consumer) {
        Map<String, Integer> counts = new HashMap<>();
        for (Map<String, AttributeValue> item : client.scan(r -> r.tableName(table).consistentRead(true)).items()) {
            String id = item.get("id").s();
            if (id.startsWith(consumer + "|")) {
                counts.put(id.substring(consumer.length() + 1), Integer.parseInt(item.get("n").n()));
            }
        }
        return counts;
    }
}
