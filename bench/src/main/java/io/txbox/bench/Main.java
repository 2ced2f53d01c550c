package io.txbox.bench;

import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;

/**
 * {@code bench/run SCENARIO [--option value]...}: runs one scenario against the local services
 * and prints a table, then {@code BENCH {json}} as its last line. Exit code 0 when the run
 * completed and every correctness check held (targets are reported, not enforced), 1 on an
 * error, 2 when a message was lost or took effect twice, 64 on a usage error.
 *
 * <p>The command line is picocli's: one subcommand per scenario, whose options are the ones the
 * scenario reads (see {@link Options#declaring}), so {@code bench/run --help} and {@code
 * bench/run SCENARIO --help} list exactly what a run understands, with defaults.
 */
public final class Main {
    /** A scenario's factory and its one-line summary for {@code --help}. */
    record Entry(Supplier<Scenario> factory, String summary) {}

    static final Map<String, Entry> SCENARIOS = new LinkedHashMap<>();

    static {
        SCENARIOS.put("inbox-overhead", new Entry(InboxOverhead::new,
                "txbox inbox + outbox transactions against the same SQL by hand (ABBA): ratio"));
        SCENARIOS.put("relay-kafka", new Entry(() -> new RelayThroughput(Broker.KAFKA),
                "drain a backlog to Kafka; ratio_to_bare against a bare KafkaProducer in the same run"));
        SCENARIOS.put("relay-rabbitmq", new Entry(() -> new RelayThroughput(Broker.RABBITMQ),
                "drain a backlog to RabbitMQ; ratio_to_bare against a bare confirm loop in the same run"));
        SCENARIOS.put("e2e-latency", new Entry(E2eLatency::new,
                "fixed rate, send commit -> receiving inbox commit latency through Kafka"));
        SCENARIOS.put("backlog-scaling", new Entry(BacklogScaling::new, "steady drain rate, large backlog / small backlog"));
        SCENARIOS.put("soak", new Entry(Soak::new, "load with faults (relay, database, Kafka): lost and double effects"));
        SCENARIOS.put("duplicate-storm", new Entry(DuplicateStorm::new,
                "concurrent duplicate deliveries, database inbox alone and behind Redis"));
        SCENARIOS.put("consumer-kafka", new Entry(ConsumerThroughput::kafka,
                "drain a Kafka backlog through KafkaInboxConsumer; ratio_to_bare, ratio_to_by_hand and batch_speedup"
                + " in the same run"));
        SCENARIOS.put("consumer-rabbitmq", new Entry(ConsumerThroughput::rabbitmq,
                "drain a RabbitMQ backlog through RabbitInboxConsumer; ratio_to_bare, ratio_to_by_hand and batch_speedup"
                + " in the same run"));
        SCENARIOS.put("sustained", new Entry(Sustained::new,
                "fixed-rate writers for minutes, then with a transaction held open: drain rate and claim p99 over time"));
        SCENARIOS.put("relay-footprint", new Entry(Footprint::new,
                "the standalone relay process: ready time, RSS, threads and heap after GC, idle and draining"));
        SCENARIOS.put("poison", new Entry(Poison::new,
                "drain a Kafka backlog with 1 %% of the keys failing every time against the same backlog without poison:"
                        + " healthy_ratio, first_healthy_delay_ms, order_violations"));
        SCENARIOS.put("cdc-kafka", new Entry(CdcThroughput::new,
                "the polling relay against Debezium (CDC mode) on the same backlog and at the same steady rate:"
                        + " cdc_to_poll, db_cpu_ratio, end-to-end p50/p99, lost, duplicates, order violations"));
        SCENARIOS.put("scale-out", new Entry(ScaleOut::new,
                "1, 2, 4 relay processes (JVMs) on one outbox: ratio_4_to_1, order violations, hand-over after SIGKILL"));
    }

    private Main() {}

    public static void main(String[] args) {
        int code = run(args, System.out);
        System.exit(code);
    }

    /** The options {@link #run} itself reads, beside the scenario's and {@link BenchEnv}'s. */
    private static boolean noHtml(Options opts) {
        return opts.flag("no-html", "skip the HTML picture");
    }

    /** The picocli command: {@code bench/run} with one subcommand per scenario. */
    static CommandLine commandLine() {
        CommandSpec top = CommandSpec.create().name("bench/run");
        top.usageMessage().description("Runs one benchmark scenario against the local PostgreSQL, RabbitMQ and a private"
                        + " Kafka broker; the last line of the output is BENCH {json}.")
                .footer("", "Exit codes: 0 completed and nothing lost or doubled, 1 error, 2 a message lost or doubled,"
                        + " 64 usage error.", "Environment: BENCH_JAVA_OPTS, TXBOX_BENCH_JDBC_URL, TXBOX_BENCH_RABBIT,"
                        + " TXBOX_BENCH_REDIS.");
        top.addOption(helpOption());
        CommandLine cl = new CommandLine(top);
        SCENARIOS.forEach((name, entry) -> {
            CommandSpec sub = CommandSpec.create().name(name);
            sub.usageMessage().description(entry.summary());
            sub.addOption(helpOption());
            Options probe = Options.declaring(name);
            entry.factory().get().configure(probe);
            new BenchEnv(probe);
            noHtml(probe);
            for (Options.Declared d : probe.declared()) {
                String text = d.description() + (d.flag() ? "" : " (default: " + d.dflt() + ")");
                sub.addOption(OptionSpec.builder("--" + d.name()).type(d.flag() ? boolean.class : String.class)
                        .arity(d.flag() ? "0" : "1").paramLabel(d.flag() ? "" : "<" + d.name() + ">")
                        .description(text).build());
            }
            cl.addSubcommand(name, sub);
        });
        return cl;
    }

    private static OptionSpec helpOption() {
        return OptionSpec.builder("-h", "--help").usageHelp(true).description("show this help and exit").build();
    }

    /** Runs one scenario; returns the exit code. Used by the smoke test without exiting. */
    static int run(String[] args, PrintStream out) {
        CommandLine cl = commandLine();
        ParseResult parsed;
        try {
            parsed = cl.parseArgs(args);
        } catch (ParameterException e) {
            System.err.println("bench: " + e.getMessage());
            e.getCommandLine().usage(System.err);
            return 64;
        }
        if (parsed.isUsageHelpRequested()) {
            cl.usage(out);
            return 0;
        }
        if (!parsed.hasSubcommand()) {
            System.err.println("bench: name a scenario");
            cl.usage(System.err);
            return 64;
        }
        ParseResult sub = parsed.subcommand();
        if (sub.isUsageHelpRequested()) {
            sub.commandSpec().commandLine().usage(out);
            return 0;
        }
        Map<String, String> given = new LinkedHashMap<>();
        for (OptionSpec o : sub.matchedOptions()) {
            given.put(o.longestName().substring(2), String.valueOf((Object) o.getValue()));
        }
        String name = sub.commandSpec().name();
        Options opts = Options.of(name, given);
        Scenario scenario;
        try {
            scenario = SCENARIOS.get(name).factory().get();
            scenario.configure(opts);
        } catch (Options.UsageException e) {
            System.err.println("bench: " + e.getMessage());
            sub.commandSpec().commandLine().usage(System.err);
            return 64;
        }
        Report report = new Report(opts.scenario);
        Html html = new Html("txbox bench: " + opts.scenario);
        boolean noHtml = noHtml(opts);
        try (BenchEnv env = new BenchEnv(opts)) {
            opts.checkAllUsed();
            if (env.mariadb && scenario.postgresOnly() != null) {
                throw new Options.UsageException(opts.scenario + " runs on PostgreSQL only (" + scenario.postgresOnly()
                        + "); leave out --db mariadb");
            }
            report.parameters(opts.parameters());
            scenario.bind(opts, env, report, html);
            env.createSchema();
            try (Connection c = env.adminConnection()) {
                report.databaseVersion(c);
            }
            scenario.run();
            if (!noHtml) {
                Path file = Scenario.resultsDir().resolve(opts.scenario + "-" + Report.timestampForFile(report.startedAt) + ".html");
                html.heading("BENCH line").pre(report.json());
                html.write(file);
                report.picture(file.toAbsolutePath().normalize());
            }
        } catch (Options.UsageException e) {
            System.err.println("bench: " + e.getMessage());
            return 64;
        } catch (Exception e) {
            System.err.println("bench: " + opts.scenario + " failed: " + e);
            e.printStackTrace();
            report.note("FAILED: " + e);
            report.print(out);
            return 1;
        }
        report.print(out);
        return scenario.failedCorrectness() ? 2 : 0;
    }
}
