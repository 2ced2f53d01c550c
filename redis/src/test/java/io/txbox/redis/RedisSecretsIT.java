package io.txbox.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import io.txbox.TxboxTables;
import io.txbox.inbox.Claim;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestDatabases;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.slf4j.LoggerFactory;

/**
 * Redis URLs with passwords (right, wrong, and in URLs that are refused) fed to both builders,
 * against a private {@code redis-server} that requires a password: no exception message, stack
 * trace or log line the module produces holds a password. The hybrid inbox runs on each database.
 */
class RedisSecretsIT {
    static final String PASSWORD = "pa55w0rd-s3cret";
    static final String WRONG = "wr0ng-s3cret";

    @RegisterExtension
    static final TestDatabases DBS = TestDatabases.perClass(4);

    static PrivateRedis redis;

    @BeforeAll
    static void start() throws Exception {
        for (TestDatabase d : DBS.all()) {
            TxboxMigrations.migrate(d.dataSource(), TxboxTables.inSchema(d.schema()));
        }
        redis = PrivateRedis.start("--requirepass", PASSWORD);
    }

    @AfterAll
    static void stop() {
        if (redis != null) {
            redis.close();
        }
    }

    static String stackTrace(Throwable t) {
        StringWriter out = new StringWriter();
        t.printStackTrace(new PrintWriter(out));
        return out.toString();
    }

    static int closedPort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Runs {@code use}; what it throws goes to {@code texts}, stack trace and causes included. */
    static <T> void attempt(List<String> texts, T subject, Consumer<T> use) {
        try {
            use.accept(subject);
        } catch (RuntimeException e) {
            texts.add(stackTrace(e));
        }
    }

    @ParameterizedTest
    @ArgumentsSource(TestDatabases.Each.class)
    void urlsWithPasswords_noExceptionMessageOrLogLineHoldsThePassword(TestDatabase db) throws Exception {
        TxboxTables tables = TxboxTables.inSchema(db.schema());
        // one Redis serves both databases: each run keeps its own keys, or the second would find the first's
        String prefix = "secrets-" + db.kind().name().toLowerCase(Locale.ROOT) + "-";
        LoggerContext logs = (LoggerContext) LoggerFactory.getILoggerFactory();
        ListAppender<ILoggingEvent> captured = new ListAppender<>();
        captured.setContext(logs);
        captured.start();
        ch.qos.logback.classic.Logger root = logs.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ch.qos.logback.classic.Logger txbox = logs.getLogger("io.txbox");
        ch.qos.logback.classic.Logger lettuce = logs.getLogger("io.lettuce");
        Level txboxLevel = txbox.getLevel();
        Level lettuceLevel = lettuce.getLevel();
        root.addAppender(captured);
        txbox.setLevel(Level.DEBUG);
        lettuce.setLevel(Level.INFO);
        List<String> texts = new ArrayList<>();
        int refusals;
        try {
            int port = redis.port();
            int closed = closedPort();
            List<String> refused = List.of(
                    "redis://" + PASSWORD + "@127.0.0.1:70000",
                    "redis://" + PASSWORD + "@127.0.0.1:notaport",
                    "redis://ops:" + PASSWORD + "@redis_prod:6379",
                    "redis://" + PASSWORD + "@127.0.0.1:6379/abc",
                    "redis://" + PASSWORD + " @127.0.0.1:6379",
                    "redis://ops:" + PASSWORD + "@127.0.0.1:6379:1",
                    "http://" + PASSWORD + "@127.0.0.1:6379",
                    "redis-sentinel://" + PASSWORD + "@",
                    "rediss://" + PASSWORD + "@[::1:6379");
            Inbox database = Inbox.builder("secrets").tables(tables).build();
            for (String url : refused) {
                attempt(texts, url, u -> RedisStore.builder("secrets").redisUrl(u).build().close());
                attempt(texts, url, u -> HybridInbox.builder(database).redisUrl(u).build().close());
            }
            refusals = texts.size();

            List<String> usable = List.of(
                    "redis://" + PASSWORD + "@127.0.0.1:" + port,
                    "redis://default:" + PASSWORD + "@127.0.0.1:" + port,
                    "redis://" + WRONG + "@127.0.0.1:" + port,
                    "redis://default:" + WRONG + "@127.0.0.1:" + port,
                    "redis://" + PASSWORD + "@127.0.0.1:" + closed);
            int n = 0;
            for (String url : usable) {
                n++;
                try (RedisStore store = RedisStore.builder("secrets").redisUrl(url).keyPrefix(prefix)
                        .commandTimeout(Duration.ofSeconds(1)).build()) {
                    attempt(texts, store, s -> {
                        Claim claim = s.claim(InboundMessage.of("key", "payload".getBytes(UTF_8)));
                        if (claim.acquired()) {
                            s.complete(claim, "done".getBytes(UTF_8));
                        }
                    });
                }
                try (HybridInbox inbox = HybridInbox.builder(database).redisUrl(url).keyPrefix(prefix + n + ":")
                        .failureThreshold(1).build()) {
                    InboundMessage m = InboundMessage.of("key-" + n, "payload".getBytes(UTF_8));
                    Outcome first = inbox.process(db.dataSource(), m, (tx, msg) -> "done".getBytes(UTF_8));
                    Outcome again = inbox.process(db.dataSource(), m, (tx, msg) -> "done".getBytes(UTF_8));
                    assertThat(first.status()).as(url.replace(PASSWORD, "*").replace(WRONG, "*"))
                            .isEqualTo(Outcome.Status.PROCESSED);
                    assertThat(again.status()).isEqualTo(Outcome.Status.DUPLICATE);
                }
            }
        } finally {
            root.detachAppender(captured);
            txbox.setLevel(txboxLevel);
            lettuce.setLevel(lettuceLevel);
        }
        for (ILoggingEvent e : captured.list) {
            texts.add(e.getLoggerName() + " " + e.getFormattedMessage()
                    + (e.getThrowableProxy() == null ? "" : "\n" + ThrowableProxyUtil.asString(e.getThrowableProxy())));
        }
        assertThat(String.join("\n", texts))
                .as("the wrong password was refused by the server and said so")
                .contains("WRONGPASS")
                .as("the breaker opened on the failures and said why")
                .contains("Redis keeps failing");
        assertThat(texts).noneMatch(t -> t.contains(PASSWORD)).noneMatch(t -> t.contains(WRONG));
        assertThat(refusals).as("every malformed URL is refused").isEqualTo(2 * 9);
    }
}
