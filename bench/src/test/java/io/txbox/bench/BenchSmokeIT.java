package io.txbox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.txbox.testkit.KafkaBroker;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every scenario runs end to end with tiny parameters, against the real PostgreSQL, RabbitMQ
 * and the build's shared Kafka broker: proves the scenarios work, not how fast they are. Each
 * scenario that runs on MariaDB runs there too, in one of its forms.
 */
class BenchSmokeIT {
    private static String kafka;

    @BeforeAll
    static void broker() {
        kafka = KafkaBroker.shared().bootstrapServers();
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void inboxOverhead_reportsBothRatesAndTheRatio(String db) throws Exception {
        JsonNode bench = run("inbox-overhead", "--db", db, "--threads", "4", "--rounds", "1", "--seconds", "1", "--warmup", "0");
        assertThat(bench.at("/figures/txbox_tx_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/by_hand_tx_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/ratio").asDouble()).isPositive();
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void relayKafka_drainsTheBacklogAndLosesNothing(String db) throws Exception {
        JsonNode bench = run("relay-kafka", "--db", db, "--rows", "2000", "--warmup-rows", "1000", "--kafka", kafka);
        assertThat(bench.at("/figures/msgs_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
        assertThat(bench.at("/figures/bare_msgs_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/ratio_to_bare").asDouble()).isPositive();
        assertThat(bench.at("/figures/by_hand_msgs_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/ratio_to_by_hand").asDouble()).isPositive();
    }

    @Test
    void relayKafka_concurrentMode_losesNothing() throws Exception {
        JsonNode bench = run("relay-kafka", "--rows", "1000", "--mode", "concurrent", "--warmup-rows", "0",
                "--kafka", kafka);
        assertThat(bench.at("/figures/lost").asLong()).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void relayRabbitmq_drainsTheBacklogAndLosesNothing(String db) throws Exception {
        JsonNode bench = run("relay-rabbitmq", "--db", db, "--rows", "2000", "--warmup-rows", "0", "--bare-windows", "100,1000");
        assertThat(bench.at("/figures/msgs_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
        assertThat(bench.at("/figures/bare_msgs_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/ratio_to_bare").asDouble()).isPositive();
        assertThat(bench.at("/figures/by_hand_msgs_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/ratio_to_by_hand").asDouble()).isPositive();
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void e2eLatency_throughTheRelayProcess_measuresEveryMessage(String db) throws Exception {
        JsonNode bench = run("e2e-latency", "--db", db, "--relay", "process", "--rate", "100", "--seconds", "2", "--warmup", "0",
                "--kafka", kafka);
        assertThat(bench.at("/figures/process_measured").asLong()).isEqualTo(200);
        assertThat(bench.at("/figures/process_p99_ms").asDouble()).isPositive();
        assertThat(bench.at("/figures/process_lost").asLong()).isZero();
        assertThat(bench.at("/figures/process_doubled").asLong()).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void relayFootprint_samplesTheStandaloneProcess(String db) throws Exception {
        JsonNode bench = run("relay-footprint", "--db", db, "--rows", "2000", "--idle-seconds", "0", "--kafka", kafka);
        assertThat(bench.at("/figures/ready_ms").asDouble()).isPositive();
        assertThat(bench.at("/figures/ready_cpu_ms").asDouble()).isPositive();
        assertThat(bench.at("/figures/drain_cpu_ms_per_1k_msgs").asDouble()).isPositive();
        assertThat(bench.at("/figures/idle_rss_mb").asDouble()).isPositive();
        assertThat(bench.at("/figures/drain_rss_max_mb").asDouble()).isPositive();
        assertThat(bench.at("/figures/drain_heap_after_gc_mb").asDouble()).isPositive();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
    }

    @Test
    void e2eLatency_measuresEveryMessage() throws Exception {
        JsonNode bench = run("e2e-latency", "--rate", "200", "--seconds", "2", "--warmup", "0", "--noise", "1",
                "--kafka", kafka);
        assertThat(bench.at("/figures/measured").asLong()).isEqualTo(400);
        assertThat(bench.at("/figures/bare_measured").asLong()).isEqualTo(400);
        assertThat(bench.at("/figures/p99_ratio_to_bare").asDouble()).isPositive();
        assertThat(bench.at("/figures/noise_processes").asInt()).isEqualTo(1);
        assertThat(bench.at("/figures/doubled").asLong()).isZero();
        assertThat(bench.at("/figures/p99_ms").asDouble()).isPositive();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
        for (String stage : new String[] {"send_to_relay", "relay_to_ack", "ack_to_poll", "poll_to_handler",
                "handler_to_commit"}) {
            assertThat(bench.at("/figures/stage_" + stage + "_p99_ms").isNumber()).as(stage).isTrue();
        }
        // the bare pipeline starts at its send call: every stage but the relay's
        for (String stage : new String[] {"relay_to_ack", "ack_to_poll", "poll_to_handler", "handler_to_commit"}) {
            assertThat(bench.at("/figures/bare_stage_" + stage + "_p99_ms").isNumber()).as("bare " + stage).isTrue();
        }
        assertThat(bench.at("/figures/cpu_db_relay_ms_per_msg").asDouble()).isPositive();
        assertThat(bench.at("/figures/bare_cpu_ms_per_msg").asDouble()).isPositive();
    }

    @Test
    void e2eLatency_batchedReceiversMeasureEveryMessage() throws Exception {
        JsonNode bench = run("e2e-latency", "--rate", "200", "--seconds", "2", "--warmup", "0", "--consumer-batch", "20",
                "--trace-sql", "--kafka", kafka);
        assertThat(bench.at("/parameters/consumer-batch").asInt()).isEqualTo(20);
        assertThat(bench.at("/figures/relay_sql").size()).isPositive();
        assertThat(bench.at("/figures/receiver_sql").size()).isPositive();
        assertThat(bench.at("/figures/measured").asLong()).isEqualTo(400);
        assertThat(bench.at("/figures/stage_handler_to_commit_p99_ms").isNumber()).isTrue();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
        assertThat(bench.at("/figures/doubled").asLong()).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void backlogScaling_reportsTheRatio(String db) throws Exception {
        JsonNode bench = run("backlog-scaling", "--db", db, "--small", "500", "--rows", "2000", "--batch", "100",
                "--warmup-rows", "0", "--kafka", kafka);
        assertThat(bench.at("/figures/ratio").asDouble()).isPositive();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void soak_withRelayAndDatabaseFaults_losesNothingAndDoublesNothing(String db) throws Exception {
        JsonNode bench = run("soak", "--db", db, "--minutes", "0.2", "--rate", "100", "--fault-every", "3", "--faults", "relay,db",
                "--kafka", kafka);
        assertThat(bench.at("/figures/sent").asLong()).isPositive();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
        assertThat(bench.at("/figures/double_effects").asLong()).isZero();
        // the faults happened: both kinds struck (they are taken in turn) while messages flowed, and
        // each terminated sessions; the consumers read every record before the doubles were counted
        assertThat(bench.at("/figures/faults_by_kind/relay").asInt()).as("relay faults with an effect").isPositive();
        assertThat(bench.at("/figures/faults_by_kind/db").asInt()).as("database faults with an effect").isPositive();
        assertThat(bench.at("/figures/faults_without_effect").asLong()).isZero();
        assertThat(bench.at("/figures/consumers_caught_up").asInt()).isEqualTo(1);
    }

    @Test
    void soak_withKafkaBrokerKilled_losesNothingAndDoublesNothing() throws Exception {
        JsonNode bench = run("soak", "--minutes", "0.15", "--rate", "100", "--fault-every", "3", "--faults", "kafka");
        assertThat(bench.at("/figures/sent").asLong()).isPositive();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
        assertThat(bench.at("/figures/double_effects").asLong()).isZero();
        assertThat(bench.at("/figures/faults_by_kind/kafka").asInt()).as("broker SIGKILLs that stopped publishing")
                .isPositive();
        assertThat(bench.at("/figures/faults_without_effect").asLong()).isZero();
        assertThat(bench.at("/figures/consumers_caught_up").asInt()).isEqualTo(1);
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void duplicateStorm_withAndWithoutRedis_reportsTheFactorsAndDoublesNothing(String db) throws Exception {
        JsonNode bench = run("duplicate-storm", "--db", db, "--senders", "8", "--keys", "100", "--copies", "5");
        assertThat(bench.at("/figures/tx_reduction").asDouble()).isGreaterThan(1);
        assertThat(bench.at("/figures/throughput_ratio").asDouble()).isPositive();
        assertThat(bench.at("/figures/double_effects").asLong()).isZero();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void consumerKafka_reportsRatiosToBareAndByHandAndBatchSpeedupAndDoublesNothing(String db) throws Exception {
        JsonNode bench = run("consumer-kafka", "--db", db, "--messages", "300", "--batch", "50", "--warmup", "0", "--kafka", kafka);
        assertThat(bench.at("/figures/ratio_to_bare").asDouble()).isPositive();
        assertThat(bench.at("/figures/by_hand_msgs_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/ratio_to_by_hand").asDouble()).isPositive();
        assertThat(bench.at("/figures/batch_speedup").asDouble()).isPositive();
        assertThat(bench.at("/figures/broken_passes").asLong()).isZero();
    }

    @Test
    void consumerKafkaPoison_reportsHealthyRatio_parksEveryPoisonKeysMessages_doublesNothing() throws Exception {
        JsonNode bench = run("consumer-kafka", "--messages", "200", "--keys", "20", "--poison", "0.1", "--warmup", "0",
                "--kafka", kafka);
        assertThat(bench.at("/figures/healthy_ratio").asDouble()).isPositive();
        assertThat(bench.at("/figures/poison_keys").asLong()).isEqualTo(2);
        assertThat(bench.at("/figures/parked_messages_per_pass").asLong()).isEqualTo(20);
        assertThat(bench.at("/figures/broken_passes").asLong()).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void consumerRabbitmq_reportsRatiosToBareAndByHandAndBatchSpeedupAndDoublesNothing(String db) throws Exception {
        JsonNode bench = run("consumer-rabbitmq", "--db", db, "--messages", "300", "--batch", "50", "--warmup", "0");
        assertThat(bench.at("/figures/ratio_to_bare").asDouble()).isPositive();
        assertThat(bench.at("/figures/by_hand_msgs_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/ratio_to_by_hand").asDouble()).isPositive();
        assertThat(bench.at("/figures/batch_speedup").asDouble()).isPositive();
        assertThat(bench.at("/figures/broken_passes").asLong()).isZero();
    }

    @Test
    void sustained_reportsEachIntervalWithAndWithoutTheHeldTransaction() throws Exception {
        JsonNode bench = run("sustained", "--minutes", "0.05", "--held-minutes", "0.025", "--interval-s", "1", "--rate", "300",
                "--calibration-rows", "0", "--kafka", kafka);
        JsonNode intervals = bench.at("/figures/intervals");
        assertThat(intervals).hasSize(6);
        long held = 0;
        for (JsonNode i : intervals) {
            held += i.get("held").asBoolean() ? 1 : 0;
            assertThat(i.get("tableBytes").asLong()).isPositive();
        }
        assertThat(held).as("intervals with the transaction held open").isBetween(1L, 3L);
        assertThat(bench.at("/figures/last_to_first").asDouble()).isPositive();
        assertThat(bench.at("/figures/last_to_first_held").asDouble()).isPositive();
        assertThat(bench.at("/figures/claim_p99_last_to_first").asDouble()).isPositive();
        assertThat(bench.at("/figures/published_reported").asLong()).isEqualTo(bench.at("/figures/rows").asLong());
        assertThat(bench.at("/figures/outbox_left").asLong()).isZero();
    }

    @Test
    void sustained_onMariaDb_refusedAsAUsageErrorThatSaysWhy() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream stderr = System.err;
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            System.setErr(e);
            code = Main.run(new String[] {"sustained", "--db", "mariadb", "--minutes", "0.05", "--held-minutes", "0.025",
                    "--kafka", kafka}, o);
        } finally {
            System.setErr(stderr);
        }
        assertThat(code).isEqualTo(64);
        assertThat(out.toString(StandardCharsets.UTF_8)).doesNotContain("BENCH {");
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("sustained runs on PostgreSQL only", "leave out --db mariadb");
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void scaleOut_relayProcessesKeepTheOrderAndTakeOverTheLanesOfAKilledOne(String db) throws Exception {
        JsonNode bench = run("scale-out", "--db", db, "--rows", "4000", "--warmup-rows", "1000", "--warmup-rounds", "2", "--batch", "100",
                "--processes", "1,2", "--lane-lease-s", "3", "--kafka", kafka);
        assertThat(bench.at("/figures/msgs_per_sec_1").asDouble()).isPositive();
        assertThat(bench.at("/figures/ratio_2_to_1").asDouble()).isPositive();
        assertThat(bench.at("/figures/order_violations").asLong()).isZero();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
        assertThat(bench.at("/figures/killed_lanes").asInt()).isPositive();
        assertThat(bench.at("/figures/handover_s").asDouble()).isPositive();
        // each measured run was warmed by at most --warmup-rounds, and every process's rows are accounted for
        for (JsonNode r : List.of(bench.at("/figures/runs/0"), bench.at("/figures/runs/1"))) {
            assertThat(r.at("/warmupRounds").size()).isBetween(1, 2);
            assertThat(r.at("/perProcess").size()).isEqualTo(r.at("/processes").asInt());
        }
        // the sessions report their counts about once a second: a few warm-up deletes may fall in the window;
        // MariaDB keeps no such counts
        if (db.equals("postgresql")) {
            assertThat(bench.at("/figures/runs/1/outboxReads/deleted").asLong()).isGreaterThanOrEqualTo(4000);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void cdcKafka_bothPathsDeliverEveryMessageInKeyOrder_atASteadyRateAndFromABacklog(String db) throws Exception {
        JsonNode bench = run("cdc-kafka", "--db", db, "--rows", "2000", "--rate", "500", "--steady-rows", "500",
                "--warmup-rows", "0", "--rounds", "1", "--kafka", kafka);
        assertThat(bench.at("/figures/cdc_msgs_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/poll_msgs_per_sec").asDouble()).isPositive();
        assertThat(bench.at("/figures/cdc_to_poll").asDouble()).isPositive();
        assertThat(bench.at("/figures/backlog_db_cpu_ratio").isNumber()).isTrue();
        assertThat(bench.at("/figures/db_cpu_ratio").isNumber()).isTrue();
        assertThat(bench.at("/figures/cdc_p99_ms").asDouble()).isPositive();
        assertThat(bench.at("/figures/poll_p99_ms").asDouble()).isPositive();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
        assertThat(bench.at("/figures/order_violations").asLong()).isZero();
        assertThat(bench.at("/figures/outbox_left").asLong()).isZero();
        assertThat(bench.at("/figures/cdc_duplicates").isNumber()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb"})
    void poison_healthyKeysKeepTheirRateAndOrder(String db) throws Exception {
        JsonNode bench = run("poison", "--db", db, "--rows", "3000", "--keys", "200", "--warmup-rows", "0", "--max-seconds", "30",
                "--kafka", kafka);
        assertThat(bench.at("/figures/healthy_ratio").asDouble()).isPositive();
        assertThat(bench.at("/figures/healthy_not_published").asLong()).isZero();
        assertThat(bench.at("/figures/order_violations").asLong()).isZero();
        assertThat(bench.at("/figures/lost").asLong()).isZero();
        assertThat(bench.at("/figures/poison_keys").asInt()).isEqualTo(2);
    }

    private static JsonNode run(String... args) throws Exception {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        List<String> all = new ArrayList<>(List.of(args));
        int code;
        try (PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            code = Main.run(all.toArray(String[]::new), out);
        }
        String text = buf.toString(StandardCharsets.UTF_8);
        System.out.print(text);
        assertThat(code).as("exit code of bench %s", all).isZero();
        String[] lines = text.strip().split("\n");
        String last = lines[lines.length - 1];
        assertThat(last).startsWith("BENCH {");
        JsonNode bench = new ObjectMapper().readTree(last.substring("BENCH ".length()));
        assertThat(bench.get("scenario").asText()).isEqualTo(args[0]);
        assertThat(bench.at("/machine/cores").asInt()).isPositive();
        assertThat(bench.at("/jvm/version").asText()).isNotBlank();
        return bench;
    }
}
