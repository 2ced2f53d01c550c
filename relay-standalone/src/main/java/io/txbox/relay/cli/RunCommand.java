package io.txbox.relay.cli;

import io.txbox.ConfigException;
import io.txbox.relay.standalone.Redaction;
import io.txbox.relay.standalone.RelayConfig;
import io.txbox.relay.standalone.StandaloneRelay;
import java.util.List;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code run}: the relay process, until SIGTERM or SIGINT. */
@Command(name = "run", mixinStandardHelpOptions = true,
        description = {"Runs the relay: publishes outbox rows to the configured destinations.",
            "Serves /health/live, /health/ready and /metrics on txbox.http.port.",
            "Stops gracefully on SIGTERM or SIGINT (in-flight batches finish, lanes are released) and then"
                + " exits with 0."})
final class RunCommand implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(RunCommand.class);

    @Mixin
    ConfigOptions configOptions;

    @Option(names = "--check", description = "Only validate the configuration (values, JDBC driver, that every"
            + " configured host name resolves), print it (secrets masked) and exit; connects to nothing.")
    boolean check;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        RelayConfig config = configOptions.load(((TxboxCli) spec.root().userObject()).env).requireDestinations();
        if (!config.ignoredEnv().isEmpty()) {
            log.warn("ignoring environment variables that name no txbox key: {}", config.ignoredEnv());
        }
        if (check) {
            List<String> unknown = config.unknownHosts();
            if (!unknown.isEmpty()) {
                throw new ConfigException("invalid configuration:\n  " + String.join("\n  ", unknown));
            }
            config.describe().forEach((k, v) -> spec.commandLine().getOut().println(Redaction.scrub(k + "=" + v)));
            spec.commandLine().getOut().println("configuration is valid");
            return TxboxCli.OK;
        }
        return StandaloneRelay.runUntilStopped(config) ? TxboxCli.OK : TxboxCli.FAILED;
    }
}
