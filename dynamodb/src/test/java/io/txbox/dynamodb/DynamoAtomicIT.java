package io.txbox.dynamodb;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.InvalidInputException;
import io.txbox.RetryableException;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.Outcome;
import io.txbox.testkit.TestDynamo;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.CancellationReason;
import software.amazon.awssdk.services.dynamodb.model.Put;
import software.amazon.awssdk.services.dynamodb.model.TransactWriteItem;
import software.amazon.awssdk.services.dynamodb.model.TransactionCanceledException;
import software.amazon.awssdk.services.dynamodb.model.Update;

/**
 * Atomic mode ({@link DynamoStore#process}): the entry and the handler's writes in one
 * {@code TransactWriteItems}, against the testkit's DynamoDB-compatible server; every outcome is
 * read back from the tables.
 */
class DynamoAtomicIT {
    @RegisterExtension
    static final TestDynamo DYNAMO = TestDynamo.perClass();

    static DynamoDbClient client;
    static String inbox;
    static String accounts;

    @BeforeAll
    static void createTables() {
        client = Clients.of(DYNAMO.endpoint());
        inbox = DYNAMO.table("inbox");
        accounts = DYNAMO.table("accounts");
        DynamoStore.createTable(client, inbox);
        DynamoStore.createTable(client, accounts); // a business table; its key attribute happens to be pk too
    }

    @AfterAll
    static void close() {
        client.close();
    }

    static DynamoStore.Builder builder(String consumer) {
        return DynamoStore.builder(consumer).client(client).table(inbox);
    }

    static InboundMessage msg(String key, String payload) {
        return InboundMessage.of(key, payload.getBytes(UTF_8));
    }

    static Map<String, AttributeValue> account(String id) {
        return client.getItem(r -> r.tableName(accounts).key(Map.of("pk", AttributeValue.fromS(id)))
                .consistentRead(true)).item();
    }

    static Map<String, AttributeValue> entry(String consumer, String key) {
        return client.getItem(r -> r.tableName(inbox).key(Map.of("pk", AttributeValue.fromS(consumer + "|k|" + key)))
                .consistentRead(true)).item();
    }

    /** Opens account {@code id} with balance 0, only if it does not exist. */
    static TransactWriteItem open(String id) {
        return TransactWriteItem.builder().put(Put.builder().tableName(accounts)
                .item(Map.of("pk", AttributeValue.fromS(id), "balance", AttributeValue.fromN("0")))
                .conditionExpression("attribute_not_exists(pk)").build()).build();
    }

    /** Adds {@code amount} to account {@code id}'s balance, creating it at 0 first if needed. */
    static TransactWriteItem credit(String id, int amount) {
        return TransactWriteItem.builder().update(Update.builder().tableName(accounts)
                .key(Map.of("pk", AttributeValue.fromS(id)))
                .updateExpression("SET balance = if_not_exists(balance, :zero) + :amount")
                .expressionAttributeValues(Map.of(":zero", AttributeValue.fromN("0"), ":amount",
                        AttributeValue.fromN(Integer.toString(amount))))
                .build()).build();
    }

    @Test
    void process_firstDelivery_entryAndBusinessWritesCommitTogether_duplicateReplaysWithoutRunningHandler() {
        DynamoStore store = builder("atomic-first").build();
        AtomicInteger runs = new AtomicInteger();
        DynamoHandler handler = (m, writes) -> {
            runs.incrementAndGet();
            writes.add(open("first-a"));
            writes.add(credit("first-b", 25));
            return "receipt-1".getBytes(UTF_8);
        };

        Outcome first = store.process(msg("pay-1", "p"), handler);
        Outcome again = store.process(msg("pay-1", "p"), handler);

        assertThat(first.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(new String(first.result(), UTF_8)).isEqualTo("receipt-1");
        assertThat(again.status()).isEqualTo(Outcome.Status.DUPLICATE);
        assertThat(new String(again.result(), UTF_8)).isEqualTo("receipt-1");
        assertThat(runs).hasValue(1);
        assertThat(account("first-a")).containsEntry("balance", AttributeValue.fromN("0"));
        assertThat(account("first-b")).containsEntry("balance", AttributeValue.fromN("25"));
        Map<String, AttributeValue> e = entry("atomic-first", "pay-1");
        assertThat(e.get("st").s()).isEqualTo("C");
        assertThat(e.get("expires_at").n()).isNotBlank();
    }

    @Test
    void process_aWriteConditionFails_nothingOfTheTransactionWritten_attemptCountedThenDead() {
        DynamoStore store = builder("atomic-cond").maxAttempts(2).build();
        assertThat(store.process(msg("open-1", "p"), (m, w) -> {
            w.add(open("cond-taken"));
            return null;
        }).status()).isEqualTo(Outcome.Status.PROCESSED);
        DynamoHandler clash = (m, writes) -> {
            writes.add(credit("cond-other", 10)); // would apply, but the transaction is all or nothing
            writes.add(open("cond-taken")); // exists already: its condition fails
            return null;
        };

        Outcome failed = store.process(msg("open-2", "p"), clash);

        assertThat(failed.status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(failed.attempts()).isEqualTo(1);
        assertThat(failed.error()).isInstanceOf(TransactionCanceledException.class);
        List<String> codes = ((TransactionCanceledException) failed.error()).cancellationReasons().stream()
                .map(CancellationReason::code).toList();
        assertThat(codes).containsExactly("None", "None", "ConditionalCheckFailed");
        assertThat(account("cond-other")).as("the other write of the cancelled transaction").isEmpty();
        assertThat(entry("atomic-cond", "open-2").get("st").s()).isEqualTo("F");

        Outcome dead = store.process(msg("open-2", "p"), clash);
        assertThat(dead.status()).isEqualTo(Outcome.Status.DEAD);
        assertThat(store.process(msg("open-2", "p"), clash).status()).isEqualTo(Outcome.Status.DEAD);
        assertThat(account("cond-other")).isEmpty();
    }

    @Test
    void process_sameKeyOtherPayload_keyReusedWithoutRunningHandler() {
        DynamoStore store = builder("atomic-reuse").build();
        assertThat(store.process(msg("r-1", "amount=10"), (m, w) -> {
            w.add(credit("reuse-acct", 10));
            return null;
        }).status()).isEqualTo(Outcome.Status.PROCESSED);
        AtomicInteger runs = new AtomicInteger();
        Outcome reused = store.process(msg("r-1", "amount=99"), (m, w) -> {
            runs.incrementAndGet();
            w.add(credit("reuse-acct", 99));
            return null;
        });
        assertThat(reused.status()).isEqualTo(Outcome.Status.KEY_REUSED);
        assertThat(reused.reason()).contains("r-1");
        assertThat(runs).hasValue(0);
        assertThat(account("reuse-acct")).containsEntry("balance", AttributeValue.fromN("10"));
    }

    @Test
    void process_handlerThrows_nothingWritten_failedThenRunsAgain() {
        DynamoStore store = builder("atomic-throw").build();
        Outcome failed = store.process(msg("t-1", "p"), (m, writes) -> {
            writes.add(credit("throw-acct", 5));
            throw new IllegalStateException("card declined");
        });
        assertThat(failed.status()).isEqualTo(Outcome.Status.FAILED);
        assertThat(failed.reason()).contains("card declined");
        assertThat(account("throw-acct")).isEmpty();

        Outcome retried = store.process(msg("t-1", "p"), (m, writes) -> {
            writes.add(credit("throw-acct", 5));
            return null;
        });
        assertThat(retried.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(retried.attempts()).isEqualTo(2);
        assertThat(account("throw-acct")).containsEntry("balance", AttributeValue.fromN("5"));
    }

    @Test
    void process_concurrentDuplicatesAcrossThreads_oneEffect() throws Exception {
        DynamoStore store = builder("atomic-storm").lease(Duration.ofSeconds(30)).build();
        int threads = 12;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        AtomicInteger runs = new AtomicInteger();
        try {
            List<Future<Outcome>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Callable<Outcome> delivery = () -> {
                    start.await();
                    // a consumer redelivers IN_FLIGHT later: until this delivery's outcome is final
                    return await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(5))
                            .until(() -> store.process(msg("storm-1", "p"), (m, writes) -> {
                                runs.incrementAndGet();
                                writes.add(credit("storm-acct", 1));
                                return "done".getBytes(UTF_8);
                            }), Outcome::isFinal);
                };
                futures.add(pool.submit(delivery));
            }
            start.countDown();
            int processed = 0;
            for (Future<Outcome> f : futures) {
                Outcome o = f.get();
                assertThat(o.status()).isIn(Outcome.Status.PROCESSED, Outcome.Status.DUPLICATE);
                processed += o.status() == Outcome.Status.PROCESSED ? 1 : 0;
            }
            assertThat(processed).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
        assertThat(runs).hasValue(1);
        assertThat(account("storm-acct")).containsEntry("balance", AttributeValue.fromN("1"));
    }

    @Test
    void process_leaseTakenOverWhileHandlerRan_staleTransactionWritesNothing() {
        MutableClock clock = new MutableClock();
        DynamoStore slow = builder("atomic-fence").lease(Duration.ofSeconds(5)).clockSkewMargin(Duration.ZERO)
                .clock(clock).build();
        DynamoStore other = builder("atomic-fence").lease(Duration.ofSeconds(5)).clockSkewMargin(Duration.ZERO)
                .clock(clock).build();

        assertThatThrownBy(() -> slow.process(msg("f-1", "p"), (m, writes) -> {
            clock.advance(Duration.ofSeconds(6)); // the slow worker stalls past its lease
            Outcome taken = other.process(msg("f-1", "p"), (m2, w2) -> {
                w2.add(credit("fence-acct", 1));
                return null;
            });
            assertThat(taken.status()).isEqualTo(Outcome.Status.PROCESSED);
            writes.add(credit("fence-acct", 100));
            return null;
        })).isInstanceOf(LeaseLostException.class);

        assertThat(account("fence-acct")).containsEntry("balance", AttributeValue.fromN("1"));
        assertThat(other.process(msg("f-1", "p"), (m, w) -> null).status()).isEqualTo(Outcome.Status.DUPLICATE);
    }

    @Test
    void process_badWrites_refusedBeforeAnyWrite_noAttemptCounted() {
        DynamoStore store = builder("atomic-bad").build();
        assertThatThrownBy(() -> store.process(msg("b-1", "p"), (m, writes) -> {
            for (int i = 0; i <= DynamoStore.MAX_TRANSACTION_WRITES; i++) {
                writes.add(credit("bad-" + i, 1));
            }
            return null;
        })).isInstanceOf(InvalidInputException.class).hasMessageContaining("100 writes")
                .hasMessageContaining("at most " + DynamoStore.MAX_TRANSACTION_WRITES);
        assertThatThrownBy(() -> store.process(msg("b-1", "p"), (m, writes) -> {
            writes.add(TransactWriteItem.builder().update(Update.builder().tableName(inbox)
                    .key(Map.of("pk", AttributeValue.fromS("atomic-bad|k|b-1"))).updateExpression("SET x = :x")
                    .expressionAttributeValues(Map.of(":x", AttributeValue.fromS("y"))).build()).build());
            return null;
        })).isInstanceOf(InvalidInputException.class).hasMessageContaining("own entry");
        assertThatThrownBy(() -> store.process(msg("b-1", "p"), (m, writes) -> "x".repeat(300 * 1024).getBytes(UTF_8)))
                .isInstanceOf(InvalidInputException.class).hasMessageContaining("maxResultBytes");
        assertThat(account("bad-0")).isEmpty();

        Outcome ok = store.process(msg("b-1", "p"), (m, writes) -> {
            writes.add(credit("bad-0", 1));
            return null;
        });
        assertThat(ok.status()).isEqualTo(Outcome.Status.PROCESSED);
        assertThat(ok.attempts()).as("refused runs were given back, not counted").isEqualTo(1);
    }

    @Test
    void process_serverDown_retryableAndNothingMarkedDone() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            port = s.getLocalPort();
        }
        DynamoStore store = builder("atomic-down").build();
        try (DynamoDbClient down = Clients.of(URI.create("http://127.0.0.1:" + port))) {
            DynamoStore unreachable = new DynamoStoreImpl(DynamoStore.builder("atomic-down").client(down).table(inbox));
            AtomicInteger runs = new AtomicInteger();
            assertThatThrownBy(() -> unreachable.process(msg("d-1", "p"), (m, w) -> {
                runs.incrementAndGet();
                return null;
            })).isInstanceOf(RetryableException.class).hasMessageContaining("could not be reached");
            assertThat(runs).as("no claim, no handler").hasValue(0);
        }
        assertThat(entry("atomic-down", "d-1")).isEmpty();
        assertThat(store.process(msg("d-1", "p"), (m, w) -> null).status()).isEqualTo(Outcome.Status.PROCESSED);
    }
}
