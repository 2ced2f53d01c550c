package io.txbox.relay.cli;

import io.txbox.relay.standalone.RelayConfig;
import java.nio.file.Path;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/** {@code --config FILE}, shared by every command. */
final class ConfigOptions {
    @Option(names = {"-c", "--config"}, paramLabel = "FILE",
            description = {"Config file (Java properties). Default: $TXBOX_CONFIG, else none.",
                "Every key can also come from the environment: TXBOX_JDBC_URL for txbox.jdbc.url, and so on."})
    @Nullable Path config;

    /** The validated configuration. */
    RelayConfig load(Map<String, String> env) {
        return RelayConfig.load(file(env), env);
    }

    /** Only what the admin commands read: {@code txbox.jdbc.*}, {@code txbox.schema}, {@code txbox.table-prefix}. */
    RelayConfig loadForAdmin(Map<String, String> env) {
        return RelayConfig.loadForAdmin(file(env), env);
    }

    private @Nullable Path file(Map<String, String> env) {
        Path file = config;
        if (file == null && env.get("TXBOX_CONFIG") != null && !env.get("TXBOX_CONFIG").isBlank()) {
            file = Path.of(env.get("TXBOX_CONFIG"));
        }
        return file;
    }
}
