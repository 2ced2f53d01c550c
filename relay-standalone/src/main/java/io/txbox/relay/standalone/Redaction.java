package io.txbox.relay.standalone;

import io.txbox.Texts;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Keeps secrets out of everything the relay process prints: config dumps, error messages, log
 * lines and CLI output.
 *
 * <p>Two layers: values of secret keys and credentials inside URLs are masked where they are
 * rendered ({@link #value}, {@link #url}); and every secret value the config held is registered
 * ({@link #register}) so {@link #scrub} can mask it in any text, such as a driver's exception
 * message or a log line, that echoes it by accident.
 */
public final class Redaction {
    /** What a secret is replaced with. */
    public static final String MASK = Texts.MASK;

    // password=... in JDBC URLs (query or ;-separated), and common secret parameters
    private static final Pattern PARAM = Pattern.compile(
            "(?i)((?:password|passwd|pwd|secret|token|sslpassword|sslkey_password)=)([^&;\\s]*)");
    private static final Pattern JAAS_PASSWORD = Pattern.compile("(?i)(password\\s*=\\s*)(\"[^\"]*\"|\\S+?)(;|\\s|$)");
    private static final List<String> SECRET_WORDS = List.of("password", "secret", "jaas", "token", "credential");

    // Process-wide on purpose: a log line can come from any thread and any library, and the
    // logback converters that call scrub() are created by logback, not by us.
    private static final Set<String> REGISTERED = new CopyOnWriteArraySet<>();

    private Redaction() {}

    /** True for keys whose value is a secret (password, SASL JAAS config, tokens, ...). */
    public static boolean isSecretKey(String key) {
        String k = key.toLowerCase(Locale.ROOT);
        return SECRET_WORDS.stream().anyMatch(k::contains);
    }

    /** The value of {@code key} as it may be shown: masked if the key is secret, URLs with credentials masked. */
    public static String value(String key, @Nullable String value) {
        if (value == null) {
            return "null";
        }
        if (isSecretKey(key)) {
            return MASK;
        }
        return url(value);
    }

    /** {@code amqp://guest:****@host}, {@code jdbc:postgresql://h/db?password=****}. */
    public static String url(String text) {
        String s = Texts.redactUrl(text);
        s = PARAM.matcher(s).replaceAll(m -> Matcher.quoteReplacement(m.group(1) + MASK));
        return s;
    }

    /** Masks a JAAS config's {@code password="..."} (used when a message quotes one). */
    static String jaas(String text) {
        return JAAS_PASSWORD.matcher(text).replaceAll(m -> Matcher.quoteReplacement(m.group(1) + MASK + m.group(3)));
    }

    /**
     * Remembers {@code secret} so {@link #scrub} masks it anywhere. Values shorter than 4
     * characters are not registered: masking every "a" in a log line would hide more than it
     * protects, and such a password offers no protection anyway.
     */
    public static void register(@Nullable String secret) {
        if (secret != null && secret.length() >= 4) {
            REGISTERED.add(secret);
        }
    }

    /** Masks registered secrets, URL credentials and JAAS passwords in {@code text}. */
    public static @Nullable String scrub(@Nullable String text) {
        if (text == null || text.isEmpty()) {
            return text;
        }
        String s = text;
        if (!REGISTERED.isEmpty()) {
            // longest first, so a secret that contains another is masked whole
            List<String> secrets = REGISTERED.stream().sorted(Comparator.comparingInt(String::length).reversed()).toList();
            for (String secret : secrets) {
                if (s.contains(secret)) {
                    s = s.replace(secret, MASK);
                }
            }
        }
        if (s.indexOf('@') >= 0 || s.indexOf('=') >= 0) {
            s = jaas(url(s));
        }
        return s;
    }
}
