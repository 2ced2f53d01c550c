package io.txbox.dynamodb;

import io.txbox.inbox.InboundMessage;
import java.util.List;
import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.services.dynamodb.model.TransactWriteItem;

/**
 * The business logic {@link DynamoStore#process} runs for a message's first delivery, in atomic
 * mode: it does not write to DynamoDB itself, it adds its writes to {@code writes}, and the store
 * applies them together with the message's entry in one {@code TransactWriteItems}.
 */
@FunctionalInterface
public interface DynamoHandler {
    /**
     * Handles {@code message}: adds up to {@value DynamoStore#MAX_TRANSACTION_WRITES} writes
     * ({@code Put}, {@code Update}, {@code Delete} or {@code ConditionCheck}, each naming its
     * table) to {@code writes}. None may address the store's own entry for the message.
     *
     * @return bytes to store and hand back to later duplicate deliveries, or {@code null}
     * @throws Exception to write nothing; the failure is counted and the message may be
     *     delivered again
     */
    byte @Nullable [] handle(InboundMessage message, List<TransactWriteItem> writes) throws Exception;
}
