package io.txbox.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.internal.ServerUrls;
import java.net.SocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Lettuce connection, shared by every thread (Lettuce multiplexes commands on it), opened
 * on first use so that a Redis that is down when the application starts costs nothing but a
 * failed call. Commands fail fast while the connection is down instead of queueing, and time
 * out after the command timeout, so a caller never waits on Redis longer than that.
 */
final class RedisLink implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RedisLink.class);

    /** Shortest time allowed for opening the connection. */
    static final Duration MIN_CONNECT_TIMEOUT = Duration.ofSeconds(2);

    /** Schemes Lettuce reads that name more than one server, or none: not checked by {@link ServerUrls}. */
    private static final Set<String> LETTUCE_ONLY =
            Set.of("redis-sentinel", "rediss-sentinel", "redis-socket", "redis+socket");

    /**
     * {@code scheme://user:password@} and {@code scheme://password@} in {@code text}, masked:
     * a Redis URL with one name before {@code @} holds a password there, not a user.
     */
    private static final Pattern USERINFO = Pattern.compile("(?i)([a-z][a-z0-9+.-]*://)([^@/?#]*)@");

    private final String name;
    private final Duration connectTimeout;
    private final Duration commandTimeout;
    private final RedisURI uri;
    private final ClientResources resources;
    private final RedisClient client;
    private final Object lock = new Object();
    private volatile @Nullable StatefulRedisConnection<byte[], byte[]> connection;
    private volatile boolean closed;

    RedisLink(String name, String url, Duration commandTimeout) {
        this.name = name;
        RedisURI parsed = parse(url);
        // Connecting (and the first use of the client's classes) takes longer than a command;
        // the command timeout is set on the connection once it is open.
        this.connectTimeout = commandTimeout.compareTo(MIN_CONNECT_TIMEOUT) > 0 ? commandTimeout : MIN_CONNECT_TIMEOUT;
        parsed.setTimeout(connectTimeout);
        this.uri = parsed;
        this.commandTimeout = commandTimeout;
        // Reconnect attempts back off to at most 1 s, so Redis is usable again soon after it returns.
        this.resources = DefaultClientResources.builder()
                .ioThreadPoolSize(2)
                .computationThreadPoolSize(2)
                .reconnectDelay(Delay.exponential(Duration.ofMillis(10), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS))
                .build();
        this.client = RedisClient.create(resources);
        client.setOptions(ClientOptions.builder()
                .autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(commandTimeout))
                .socketOptions(SocketOptions.builder().connectTimeout(connectTimeout).build())
                .build());
    }

    /** The connection, opened now if it is not yet. Throws what Lettuce throws when Redis is unreachable. */
    StatefulRedisConnection<byte[], byte[]> connection() {
        StatefulRedisConnection<byte[], byte[]> c = connection;
        if (c != null) {
            return c;
        }
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException(name + " is closed");
            }
            if (connection == null) {
                StatefulRedisConnection<byte[], byte[]> opened = client.connect(ByteArrayCodec.INSTANCE, uri);
                opened.setTimeout(commandTimeout);
                connection = opened;
                log.info("{} - connected to Redis at {}:{}", name, uri.getHost(), uri.getPort());
            }
            return connection;
        }
    }

    /**
     * Runs {@code script} by its SHA-1; when Redis does not know it (a restart, SCRIPT FLUSH, a
     * failover to a replica that never saw it), sends the source once with EVAL, which also
     * caches it on the server for the next EVALSHA.
     */
    List<Object> run(Script script, byte[][] keys, byte[]... args) {
        var sync = connection().sync();
        try {
            return sync.evalsha(script.sha, ScriptOutputType.MULTI, keys, args);
        } catch (RedisNoScriptException e) {
            log.debug("{} - script {} not cached by Redis; sending its source", name, script.name);
            return sync.eval(script.source, ScriptOutputType.MULTI, keys, args);
        }
    }

    /**
     * {@link #run} without waiting for the reply: the script is written to the connection now,
     * after every command sent before it, and runs in that order even if Redis is only slow to
     * answer. Fails at once (never blocks) when no connection is open.
     */
    CompletableFuture<List<Object>> runAsync(Script script, byte[][] keys, byte[]... args) {
        StatefulRedisConnection<byte[], byte[]> c = connection;
        if (c == null) {
            return CompletableFuture.failedFuture(new IllegalStateException(name + " has no open connection"));
        }
        try {
            var async = c.async();
            return async.<List<Object>>evalsha(script.sha, ScriptOutputType.MULTI, keys, args).toCompletableFuture()
                    .exceptionallyCompose(e -> e instanceof RedisNoScriptException
                            || e.getCause() instanceof RedisNoScriptException
                            ? async.<List<Object>>eval(script.source, ScriptOutputType.MULTI, keys, args)
                                    .toCompletableFuture()
                            : CompletableFuture.failedFuture(e));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e); // refused at once, e.g. while disconnected
        }
    }

    /** Runs {@code onConnected} on Lettuce's I/O thread each time the connection is opened again; it must not block. */
    void onReconnect(Runnable onConnected) {
        client.addListener(new RedisConnectionStateListener() {
            @Override
            public void onRedisConnected(RedisChannelHandler<?, ?> handler, SocketAddress address) {
                try {
                    onConnected.run();
                } catch (RuntimeException e) {
                    log.warn("{} - reconnect hook failed: {}", name, describe(e));
                }
            }
        });
    }

    /** Loads {@code scripts} into the server's script cache, best effort: a failure leaves it to the first call. */
    void preload(Script... scripts) {
        try {
            var sync = connection().sync();
            for (Script s : scripts) {
                String sha = sync.scriptLoad(s.source);
                if (!s.sha.equals(sha)) {
                    throw new IllegalStateException("Redis returned SHA-1 " + sha + " for script " + s.name
                            + ", expected " + s.sha);
                }
            }
        } catch (RuntimeException e) {
            log.warn("{} - could not load the Lua scripts into Redis now; they are sent on first use: {}", name,
                    describe(e));
        }
    }

    @Override
    public void close() {
        synchronized (lock) {
            closed = true;
            StatefulRedisConnection<byte[], byte[]> c = connection;
            connection = null;
            if (c != null) {
                c.close();
            }
        }
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        resources.shutdown(0, 2, TimeUnit.SECONDS);
    }

    /**
     * Checks a {@code redisUrl} option as it is set: the whole parse the link will make, so a
     * URL that would connect somewhere else than it says (a port that is not a number, read by
     * Lettuce as part of the host name) is refused here, never at the first call.
     */
    static String checkUrl(@Nullable String redisUrl) {
        if (redisUrl == null || redisUrl.isBlank()) {
            throw new ConfigException("redisUrl must be a Redis URL such as redis://127.0.0.1:6379, but was "
                    + Texts.quote(redisUrl));
        }
        parse(redisUrl);
        return redisUrl;
    }

    /**
     * {@code url} as Lettuce reads it, after the host-and-port rule every server URL of this
     * project follows ({@link ServerUrls}) for {@code redis://} and {@code rediss://}. Lettuce's
     * other forms ({@code redis-sentinel://}, {@code redis-socket://}) are left to it.
     */
    static RedisURI parse(String url) {
        int schemeEnd = url.indexOf("://");
        String scheme = schemeEnd < 0 ? "" : url.substring(0, schemeEnd).toLowerCase(Locale.ROOT);
        String problem = LETTUCE_ONLY.contains(scheme) ? null : ServerUrls.problem(url, "redis", "rediss");
        if (problem == null && !LETTUCE_ONLY.contains(scheme)) {
            String path = URI.create(url).getRawPath();
            if (path != null && !path.isEmpty() && !path.matches("/[0-9]{0,5}")) {
                problem = "has database " + Texts.quote(path.substring(1)) + ", which is not a number";
            }
        }
        RedisURI parsed = null;
        if (problem == null) {
            try {
                parsed = RedisURI.create(url);
            } catch (RuntimeException e) {
                problem = "is refused by the Redis client: " + redact(String.valueOf(e.getMessage()));
            }
        }
        if (problem != null || parsed == null) {
            throw new ConfigException("redisUrl " + Texts.quote(redact(url)) + " " + problem
                    + "; write it as redis://[[user:]password@]host:6379[/database]");
        }
        return parsed;
    }

    /**
     * {@code text} with every URL's password masked ({@link Texts#MASK}), the user kept:
     * {@code redis://****@host}, {@code redis://user:****@host}. For every message or log line
     * that may hold a Redis URL or a client's text about one.
     */
    static String redact(@Nullable String text) {
        if (text == null) {
            return "null";
        }
        return USERINFO.matcher(text).replaceAll(m -> {
            String info = m.group(2);
            int colon = info.indexOf(':');
            String masked = colon < 0 ? Texts.MASK : info.substring(0, colon) + ":" + Texts.MASK;
            return Matcher.quoteReplacement(m.group(1) + masked + "@");
        });
    }

    /**
     * {@code e} and its causes, for a message or a log line, every URL password masked: Lettuce
     * wraps the server's own reason (WRONGPASS, NOAUTH) in a generic "Unable to connect".
     */
    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder(e.toString());
        Throwable c = e.getCause();
        for (int depth = 0; c != null && c != e && depth < 4; depth++, c = c.getCause()) {
            sb.append("; caused by ").append(c);
        }
        return redact(sb.toString());
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** A Lua script and its SHA-1, computed here so a call needs no round trip to learn it. */
    static final class Script {
        final String name;
        final byte[] source;
        final String sha;

        Script(String name, String source) {
            this.name = name;
            this.source = utf8(source);
            this.sha = sha1Hex(this.source);
        }

        private static String sha1Hex(byte[] bytes) {
            try {
                byte[] d = java.security.MessageDigest.getInstance("SHA-1").digest(bytes);
                StringBuilder sb = new StringBuilder(40);
                for (byte b : d) {
                    sb.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
                }
                return sb.toString();
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new IllegalStateException("every Java platform has SHA-1", e);
            }
        }
    }
}
