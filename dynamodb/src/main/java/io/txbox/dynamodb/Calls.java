package io.txbox.dynamodb;

import io.txbox.RetryableException;
import io.txbox.Texts;
import io.txbox.TxboxException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.ProvisionedThroughputExceededException;
import software.amazon.awssdk.services.dynamodb.model.RequestLimitExceededException;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;

/**
 * Runs one DynamoDB call: sends a throttled call again with exponential backoff and jitter, and
 * turns the SDK's exceptions into txbox's. A failed condition passes through unchanged: the
 * store decides what it means.
 */
final class Calls {
    private static final Logger log = LoggerFactory.getLogger(DynamoStore.class);
    static final long FIRST_BACKOFF_MS = 50;
    static final long MAX_BACKOFF_MS = 2000;

    /** Waits between throttled attempts; a test passes one that records instead of sleeping. */
    @FunctionalInterface
    interface Sleeper {
        void sleep(long millis) throws InterruptedException;
    }

    private final String consumer;
    private final String table;
    private final int throttleRetries;
    private final Sleeper sleeper;

    Calls(String consumer, String table, int throttleRetries, Sleeper sleeper) {
        this.consumer = consumer;
        this.table = table;
        this.throttleRetries = throttleRetries;
        this.sleeper = sleeper;
    }

    <T> T run(String action, String key, Supplier<T> call) {
        for (int attempt = 0; ; attempt++) {
            try {
                return call.get();
            } catch (ConditionalCheckFailedException e) {
                throw e;
            } catch (SdkException e) {
                if (!throttled(e)) {
                    throw translate(action, key, e);
                }
                if (attempt >= throttleRetries) {
                    throw new RetryableException("dynamodb store " + action + " for consumer " + Texts.quote(consumer)
                            + " key " + Texts.quote(key) + " was throttled by DynamoDB " + (attempt + 1)
                            + " times; nothing was written by it. Call it again later, or raise the table's capacity: "
                            + e.getMessage(), e);
                }
                long delay = backoff(attempt);
                log.warn("{} - {} of key {} throttled by DynamoDB ({}); retry {} of {} in {} ms", consumer, action,
                        Texts.quote(key), errorCode(e), attempt + 1, throttleRetries, delay);
                try {
                    sleeper.sleep(delay);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new TxboxException("interrupted while waiting to retry a throttled " + action, ie);
                }
            }
        }
    }

    /** Between half and all of {@code min(2 s, 50 ms * 2^attempt)}. */
    static long backoff(int attempt) {
        long ceiling = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS << Math.min(attempt, 16));
        return ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
    }

    static boolean throttled(SdkException e) {
        return e instanceof ProvisionedThroughputExceededException || e instanceof RequestLimitExceededException
                || (e instanceof AwsServiceException a && a.isThrottlingException());
    }

    private static String errorCode(SdkException e) {
        if (e instanceof AwsServiceException a && a.awsErrorDetails() != null) {
            return a.awsErrorDetails().errorCode();
        }
        return e.getClass().getSimpleName();
    }

    private TxboxException translate(String action, String key, SdkException e) {
        if (e instanceof ResourceNotFoundException) {
            return new TxboxException("dynamodb store " + action + " for consumer " + Texts.quote(consumer)
                    + ": table " + Texts.quote(table) + " does not exist (any more); create it with"
                    + " DynamoStore.createTable: " + e.getMessage(), e);
        }
        if (e instanceof SdkClientException) {
            return unreachable(action + " for consumer " + Texts.quote(consumer) + " key " + Texts.quote(key), e);
        }
        if (e instanceof AwsServiceException a && a.statusCode() >= 500) {
            return new RetryableException("dynamodb store " + action + " for consumer " + Texts.quote(consumer)
                    + " key " + Texts.quote(key) + " failed on the server; it may or may not have taken effect,"
                    + " call it again: " + e.getMessage(), e);
        }
        return new TxboxException("dynamodb store " + action + " for consumer " + Texts.quote(consumer) + " key "
                + Texts.quote(key) + " was refused by DynamoDB: " + e.getMessage(), e);
    }

    static RetryableException unreachable(String what, SdkException e) {
        return new RetryableException("dynamodb store " + what + " failed: DynamoDB could not be reached or did not"
                + " answer in time; it may or may not have taken effect, call it again: " + e.getMessage(), e);
    }
}
