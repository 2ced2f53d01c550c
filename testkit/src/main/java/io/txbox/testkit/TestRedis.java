package io.txbox.testkit;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A key prefix of its own on a real Redis for each test class; every key under it is deleted
 * after the class. Needs {@code io.lettuce:lettuce-core} on the test class path.
 *
 * <pre>{@code
 * @RegisterExtension static final TestRedis REDIS = TestRedis.perClass();
 *
 * RedisStore store = RedisStore.builder("c").redisUrl(REDIS.url()).keyPrefix(REDIS.prefix()).build();
 * }</pre>
 *
 * <p>The server is the one named by {@code TXBOX_TEST_REDIS_URL}, else {@value #DEFAULT_URL}.
 * If it does not answer a PING within {@link #CONNECT_TIMEOUT}, {@code beforeAll} throws a
 * {@link TestkitException} naming the address and how to start Redis. The class never flushes a
 * database: other tests share the server.
 */
public final class TestRedis implements BeforeAllCallback, AfterAllCallback {
  /** The server used when the environment names none. */
  public static final String DEFAULT_URL = "redis://127.0.0.1:6379";
  /** How long the server may take to answer before the class fails. */
  public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(3);

  private final Object lock = new Object();
  private @Nullable RedisClient client;
  private @Nullable StatefulRedisConnection<String, String> connection;
  private volatile @Nullable String prefix;
  private @Nullable String ownerId;
  private final String url;

  private TestRedis(String url) {
    this.url = url;
  }

  /** An extension on the server of {@code TXBOX_TEST_REDIS_URL}, else {@value #DEFAULT_URL}. */
  public static TestRedis perClass() {
    String env = System.getenv("TXBOX_TEST_REDIS_URL");
    return new TestRedis(env == null || env.isBlank() ? DEFAULT_URL : env);
  }

  /** An extension on the server at {@code url} ({@code redis://host:port[/database]}), whatever the environment says. */
  public static TestRedis perClass(String url) {
    if (url == null || url.isBlank()) {
      throw new IllegalArgumentException("url must be a Redis URL such as " + DEFAULT_URL + ", but was " + url);
    }
    return new TestRedis(url);
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    synchronized (lock) {
      if (prefix != null) {
        return; // a @Nested class shares the outer class's prefix
      }
      probe();
      RedisURI uri = RedisURI.create(url);
      uri.setTimeout(CONNECT_TIMEOUT);
      RedisClient c = RedisClient.create(uri);
      try {
        StatefulRedisConnection<String, String> conn = c.connect();
        conn.sync().ping();
        client = c;
        connection = conn;
      } catch (RuntimeException e) {
        c.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        throw unreachable(e);
      }
      prefix = "txbox-test:" + Names.classId(context.getRequiredTestClass()) + ":";
      ownerId = context.getUniqueId();
    }
  }

  /** A plain TCP connect first: an absent server fails in milliseconds, before the client starts. */
  private void probe() {
    String host;
    int port;
    try {
      java.net.URI u = java.net.URI.create(url);
      host = u.getHost() == null ? "127.0.0.1" : u.getHost();
      port = u.getPort() < 0 ? 6379 : u.getPort();
    } catch (IllegalArgumentException e) {
      throw new TestkitException("TXBOX_TEST_REDIS_URL " + url + " is not a URL such as " + DEFAULT_URL, e);
    }
    try (java.net.Socket s = new java.net.Socket()) {
      s.connect(new java.net.InetSocketAddress(host, port), (int) CONNECT_TIMEOUT.toMillis());
    } catch (java.io.IOException e) {
      throw unreachable(e);
    }
  }

  private TestkitException unreachable(Exception e) {
    return new TestkitException("Redis at " + url + " did not answer within " + CONNECT_TIMEOUT.toSeconds()
        + " s (" + e.getMessage() + "). Start it with `redis-server --daemonize yes --save '' --appendonly no`"
        + " or set TXBOX_TEST_REDIS_URL to a running server.", e);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    synchronized (lock) {
      if (prefix == null || !context.getUniqueId().equals(ownerId)) {
        return;
      }
      try {
        deleteAll();
      } finally {
        if (connection != null) {
          connection.close();
        }
        if (client != null) {
          client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
        connection = null;
        client = null;
        prefix = null;
        ownerId = null;
      }
    }
  }

  /** The server's URL, as {@code redis://host:port[/database]}. */
  public String url() {
    return url;
  }

  /** This class's key prefix, {@code txbox-test:<class>-<random>:}. */
  public String prefix() {
    String p = prefix;
    if (p == null) {
      throw new IllegalStateException("TestRedis is not started: register it as a static @RegisterExtension field");
    }
    return p;
  }

  /** Commands on the extension's own connection (strings), for assertions. */
  public RedisCommands<String, String> commands() {
    StatefulRedisConnection<String, String> c = connection;
    if (c == null) {
      throw new IllegalStateException("TestRedis is not started: register it as a static @RegisterExtension field");
    }
    return c.sync();
  }

  /**
   * Deletes every key under {@link #prefix()}, as a restart of a Redis without persistence
   * would for this class, without touching anyone else's keys.
   *
   * @return the number of keys deleted
   */
  public long deleteAll() {
    RedisCommands<String, String> redis = commands();
    ScanArgs match = ScanArgs.Builder.matches(prefix() + "*").limit(1000);
    long deleted = 0;
    ScanCursor cursor = ScanCursor.INITIAL;
    do {
      KeyScanCursor<String> page = redis.scan(cursor, match);
      if (!page.getKeys().isEmpty()) {
        deleted += redis.unlink(page.getKeys().toArray(String[]::new));
      }
      cursor = page;
    } while (!cursor.isFinished());
    return deleted;
  }
}
