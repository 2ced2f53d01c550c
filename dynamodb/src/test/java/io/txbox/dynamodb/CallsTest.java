package io.txbox.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.RetryableException;
import io.txbox.TxboxException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.ProvisionedThroughputExceededException;
import software.amazon.awssdk.services.dynamodb.model.RequestLimitExceededException;

/**
 * The throttling path, which a local emulator never takes: DynamoDB's throttling exceptions are
 * sent again with backoff, everything else is translated at once.
 */
class CallsTest {
    private final List<Long> waits = new ArrayList<>();
    private final Calls calls = new Calls("c", "t", 3, waits::add);

    private static ProvisionedThroughputExceededException throttled() {
        return (ProvisionedThroughputExceededException) ProvisionedThroughputExceededException.builder()
                .message("The level of configured provisioned throughput for the table was exceeded")
                .statusCode(400)
                .awsErrorDetails(AwsErrorDetails.builder().errorCode("ProvisionedThroughputExceededException").build())
                .build();
    }

    @Test
    void run_throttledTwice_sentAgainWithGrowingBackoff_andReturnsTheAnswer() {
        AtomicInteger sent = new AtomicInteger();

        String answer = calls.run("claim", "k", () -> {
            if (sent.incrementAndGet() <= 2) {
                throw throttled();
            }
            return "stored";
        });

        assertThat(answer).isEqualTo("stored");
        assertThat(sent).hasValue(3);
        assertThat(waits).hasSize(2);
        assertThat(waits.get(0)).isBetween(25L, 50L);
        assertThat(waits.get(1)).isBetween(50L, 100L);
    }

    @Test
    void run_throttledPastTheRetries_retryableExceptionSayingNothingWasWritten() {
        AtomicInteger sent = new AtomicInteger();

        assertThatThrownBy(() -> calls.run("complete", "order-1", () -> {
            sent.incrementAndGet();
            throw RequestLimitExceededException.builder().message("limit").statusCode(400)
                    .awsErrorDetails(AwsErrorDetails.builder().errorCode("RequestLimitExceeded").build()).build();
        }))
                .isInstanceOf(RetryableException.class)
                .hasMessageContaining("complete for consumer \"c\" key \"order-1\" was throttled by DynamoDB 4 times")
                .hasMessageContaining("nothing was written");
        assertThat(sent).hasValue(4);
        assertThat(waits).hasSize(3);
    }

    @Test
    void run_throttlingErrorCodeOnAPlainServiceException_alsoRetried() {
        AtomicInteger sent = new AtomicInteger();

        String answer = calls.run("claim", "k", () -> {
            if (sent.incrementAndGet() == 1) {
                throw DynamoDbException.builder().message("slow down").statusCode(400)
                        .awsErrorDetails(AwsErrorDetails.builder().errorCode("ThrottlingException").build()).build();
            }
            return "ok";
        });

        assertThat(answer).isEqualTo("ok");
        assertThat(waits).hasSize(1);
    }

    @Test
    void run_connectionFailure_notRetried_retryableExceptionThatMayHaveTakenEffect() {
        AtomicInteger sent = new AtomicInteger();

        assertThatThrownBy(() -> calls.run("claim", "k", () -> {
            sent.incrementAndGet();
            throw SdkClientException.create("Unable to execute HTTP request: Connection refused");
        }))
                .isInstanceOf(RetryableException.class)
                .hasMessageContaining("may or may not have taken effect");
        assertThat(sent).hasValue(1);
        assertThat(waits).isEmpty();
    }

    @Test
    void run_validationError_txboxExceptionNotRetryable() {
        assertThatThrownBy(() -> calls.run("claim", "k", () -> {
            throw DynamoDbException.builder().message("One or more parameter values were invalid").statusCode(400)
                    .awsErrorDetails(AwsErrorDetails.builder().errorCode("ValidationException").build()).build();
        }))
                .isInstanceOf(TxboxException.class)
                .isNotInstanceOf(RetryableException.class)
                .hasMessageContaining("refused by DynamoDB");
    }

    @Test
    void run_failedCondition_passesThroughForTheStoreToRead() {
        assertThatThrownBy(() -> calls.run("claim", "k", () -> {
            throw ConditionalCheckFailedException.builder().message("The conditional request failed").build();
        })).isInstanceOf(ConditionalCheckFailedException.class);
    }

    @Test
    void backoff_capsAtTwoSeconds() {
        for (int attempt = 0; attempt < 30; attempt++) {
            assertThat(Calls.backoff(attempt)).isBetween(25L, Calls.MAX_BACKOFF_MS);
        }
        assertThat(Calls.backoff(20)).isGreaterThanOrEqualTo(Calls.MAX_BACKOFF_MS / 2);
    }
}
