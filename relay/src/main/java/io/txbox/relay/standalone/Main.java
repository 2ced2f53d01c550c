package io.txbox.relay.standalone;

import io.txbox.relay.cli.TxboxCli;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/**
 * Entry point of {@code txbox-relay.jar}: {@code java -jar txbox-relay.jar run --config FILE},
 * or one of the admin commands ({@code --help} lists them).
 */
public final class Main {
    /** The process's logging configuration, unless {@code -Dlogback.configurationFile} names another. */
    static final String LOGBACK_CONFIG = "io/txbox/relay/standalone/logback-relay.xml";

    private Main() {}

    public static void main(String[] args) {
        // before the first logger exists: the library jar must not ship a logback.xml of its own
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", LOGBACK_CONFIG);
        }
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
        int code = TxboxCli.execute(System.getenv(), out, err, args);
        System.exit(code);
    }
}
