package io.txbox.relay.cli;

import io.txbox.ConfigException;
import io.txbox.relay.standalone.Redaction;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The {@code txbox-relay} command line and the entry point of {@code txbox-relay.jar}: {@code
 * java -jar txbox-relay.jar run --config FILE}. {@code run} starts the relay process, the other commands
 * administer the txbox tables. Every command takes {@code --config FILE} (and the {@code TXBOX_*}
 * environment), {@code --help}, and the reporting ones {@code --json}.
 *
 * <p>Exit codes: {@value #OK} success, {@value #FAILED} the operation failed (database down, entry
 * not found), {@value #USAGE} bad arguments or an invalid configuration.
 */
@Command(name = "txbox-relay", mixinStandardHelpOptions = true, versionProvider = Version.class,
        description = "Publishes txbox outbox rows to Kafka and RabbitMQ, and administers the txbox tables.",
        subcommands = {RunCommand.class, MigrateCommand.class, StatusCommand.class, DeadCommand.class,
                InboxCommand.class, CommandLine.HelpCommand.class},
        footer = {"", "Configuration: a Java properties file (--config FILE or $TXBOX_CONFIG) overlaid by the"
                    + " environment: TXBOX_JDBC_URL overrides txbox.jdbc.url, and so on.",
                "Exit codes: 0 success, 1 operation failed, 2 bad arguments or invalid configuration."})
public final class TxboxCli implements Runnable {
    public static final int OK = 0;
    public static final int FAILED = 1;
    public static final int USAGE = 2;

    /** The process's logging configuration, unless {@code -Dlogback.configurationFile} names another. */
    static final String LOGBACK_CONFIG = "io/txbox/relay/standalone/logback-relay.xml";

    final Map<String, String> env;

    @Spec
    CommandSpec spec;

    private TxboxCli(Map<String, String> env) {
        this.env = Map.copyOf(env);
    }

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing command: run, migrate, status, dead or inbox");
    }

    /** Runs the command line {@code args} with the process's environment and exits with its code. */
    public static void main(String[] args) {
        // before the first logger exists: the library jar must not ship a logback.xml of its own
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", LOGBACK_CONFIG);
        }
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
        System.exit(execute(System.getenv(), out, err, args));
    }

    /**
     * Runs the command line {@code args} with {@code env} as the environment, writing results to
     * {@code out} and errors to {@code err}.
     *
     * @return the exit code
     */
    public static int execute(Map<String, String> env, PrintWriter out, PrintWriter err, String... args) {
        CommandLine cl = new CommandLine(new TxboxCli(env));
        HelpLayout.apply(cl);
        cl.setOut(out);
        cl.setErr(err);
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            // the message is all an operator needs; config messages are already multi-line and precise
            String message = e.getMessage() != null ? e.getMessage() : e.toString();
            cmd.getErr().println(cmd.getColorScheme().errorText("error: " + Redaction.scrub(message)));
            cmd.getErr().flush();
            return e instanceof ConfigException ? USAGE : FAILED;
        });
        int code = cl.execute(args);
        out.flush();
        err.flush();
        return code;
    }
}
