package io.txbox.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.TxboxTables;
import io.txbox.relay.Relay;
import io.txbox.relay.RelayListener;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One relay in its own JVM, for {@code scale-out}: started by {@link ScaleOut} with the bench's
 * class path and {@code --name=value} arguments (the relay options of {@link RelayRun}, plus
 * where to connect). It prints {@code READY}, builds and starts its relay when a line {@code GO}
 * arrives on its input, prints {@code P <count>} after every confirmed batch, and closes the
 * relay when its input ends.
 */
final class RelayProcess {
    private RelayProcess() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> given = new LinkedHashMap<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            given.put(a.substring(2, eq), a.substring(eq + 1));
        }
        String jdbcUrl = given.remove("jdbc-url");
        String user = given.remove("user");
        String password = given.remove("password");
        String schema = given.remove("schema");
        String bootstrap = given.remove("bootstrap");
        String topic = given.remove("topic");
        String id = given.remove("relay-id");
        RelayRun run = new RelayRun(Options.of("scale-out", given));
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(jdbcUrl);
        cfg.setUsername(user);
        cfg.setPassword(password);
        cfg.setSchema(schema);
        cfg.setMaximumPoolSize(run.poolSize());
        cfg.setPoolName(id);
        cfg.addDataSourceProperty("ApplicationName", id);
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        try (HikariDataSource ds = new HikariDataSource(cfg)) {
            RelayListener counter = new RelayListener() {
                @Override
                public void published(String destination, String broker, int count, Duration latency) {
                    synchronized (out) {
                        out.println("P " + count);
                        out.flush();
                    }
                }
            };
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            say(out, "READY");
            Relay relay = null;
            String line;
            while ((line = in.readLine()) != null) {
                if (line.equals("GO") && relay == null) {
                    relay = run.builder(ds, TxboxTables.inSchema(schema), id)
                            .route(topic, Destination.kafkaRoute(bootstrap, topic, run.producer, run.strictFencing))
                            .listener(counter)
                            .build();
                    relay.start();
                }
            }
            if (relay != null) {
                relay.close();
            }
        }
    }

    private static void say(PrintStream out, String line) {
        synchronized (out) {
            out.println(line);
            out.flush();
        }
    }
}
