package io.txbox.bench;

import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * {@code bench/run SCENARIO [--option value]...}: runs one scenario against the local services
 * and prints a table, then {@code BENCH {json}} as its last line. Exit code 0 when the run
 * completed and every correctness check held (targets are reported, not enforced), 1 on an
 * error, 2 when a message was lost or took effect twice, 64 on a usage error.
 */
public final class Main {
    static final Map<String, Supplier<Scenario>> SCENARIOS = new LinkedHashMap<>();

    static {
        SCENARIOS.put("inbox-overhead", InboxOverhead::new);
        SCENARIOS.put("relay-kafka", () -> new RelayThroughput(Broker.KAFKA));
        SCENARIOS.put("relay-rabbitmq", () -> new RelayThroughput(Broker.RABBITMQ));
        SCENARIOS.put("e2e-latency", E2eLatency::new);
        SCENARIOS.put("backlog-scaling", BacklogScaling::new);
        SCENARIOS.put("soak", Soak::new);
        SCENARIOS.put("duplicate-storm", DuplicateStorm::new);
        SCENARIOS.put("consumer-kafka", ConsumerThroughput::kafka);
        SCENARIOS.put("consumer-rabbitmq", ConsumerThroughput::rabbitmq);
    }

    private Main() {}

    public static void main(String[] args) {
        int code = run(args, System.out);
        System.exit(code);
    }

    /** Runs one scenario; returns the exit code. Used by the smoke test without exiting. */
    static int run(String[] args, PrintStream out) {
        Options opts;
        Scenario scenario;
        try {
            opts = Options.parse(Arrays.asList(args));
            Supplier<Scenario> s = SCENARIOS.get(opts.scenario);
            if (s == null) {
                throw new Options.UsageException("unknown scenario '" + opts.scenario + "'");
            }
            scenario = s.get();
            scenario.configure(opts);
        } catch (Options.UsageException e) {
            System.err.println("bench: " + e.getMessage());
            System.err.println("usage: bench/run SCENARIO [options]; scenarios: " + String.join(", ", SCENARIOS.keySet()));
            System.err.println("common options: --kafka host:port (default: start a private broker), --keep-schema, --no-html");
            return 64;
        }
        Report report = new Report(opts.scenario);
        Html html = new Html("txbox bench: " + opts.scenario);
        boolean noHtml = opts.flag("no-html");
        try (BenchEnv env = new BenchEnv(opts)) {
            opts.checkAllUsed();
            report.parameters(opts.parameters());
            scenario.bind(opts, env, report, html);
            env.createSchema();
            try (Connection c = env.adminConnection()) {
                report.postgresVersion(c);
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
