package io.txbox.relay.standalone;

import io.txbox.ConfigException;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * The raw {@code txbox.*} settings of the relay process: a properties file overlaid with
 * environment variables, each value remembering where it came from so a validation message can
 * say "from env TXBOX_RELAY_BATCH_SIZE" or "from relay.properties".
 */
final class ConfigSource {
    /** Prefix of every config key. */
    static final String KEY_PREFIX = "txbox.";
    /** Prefix of every environment variable that overrides a key. */
    static final String ENV_PREFIX = "TXBOX_";

    /** One setting and its origin. */
    record Raw(String key, String value, String origin) {}

    private final Map<String, Raw> values;
    private final List<String> ignoredEnv;

    private ConfigSource(Map<String, Raw> values, List<String> ignoredEnv) {
        this.values = values;
        this.ignoredEnv = ignoredEnv;
    }

    /**
     * Reads {@code file} (if given) and overlays the {@code TXBOX_*} variables of {@code env}.
     * An environment variable overrides the key it names: upper case, dots and dashes as
     * underscores ({@code txbox.jdbc.pool-size} is {@code TXBOX_JDBC_POOL_SIZE}).
     *
     * @param knownKeys keys that exist without appearing in the file, so the environment can set
     *     them (the fixed keys and the Kafka producer properties)
     */
    static ConfigSource load(@Nullable Path file, Map<String, String> env, Collection<String> knownKeys) {
        Map<String, Raw> values = new TreeMap<>();
        if (file != null) {
            Properties props = new Properties();
            try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                props.load(r);
            } catch (NoSuchFileException e) {
                throw new ConfigException("config file " + file + " does not exist");
            } catch (IOException | IllegalArgumentException e) {
                throw new ConfigException("config file " + file + " cannot be read: " + e.getMessage());
            }
            String origin = String.valueOf(file.getFileName());
            for (String key : props.stringPropertyNames()) {
                values.put(key, new Raw(key, props.getProperty(key).trim(), origin));
            }
        }
        Map<String, String> byEnvName = new LinkedHashMap<>();
        for (String key : knownKeys) {
            byEnvName.putIfAbsent(envName(key), key); // earlier keys win: the fixed keys come first
        }
        for (String key : values.keySet()) {
            byEnvName.put(envName(key), key); // a key from the file wins over a generated one
        }
        List<String> ignored = new ArrayList<>();
        for (Map.Entry<String, String> e : new TreeMap<>(env).entrySet()) {
            String name = e.getKey();
            if (!name.startsWith(ENV_PREFIX) || name.equals("TXBOX_CONFIG") || name.equals("TXBOX_LOG_LEVEL")) {
                continue;
            }
            String key = byEnvName.get(name);
            if (key == null && name.startsWith("TXBOX_DESTINATION_") && name.length() > "TXBOX_DESTINATION_".length()) {
                // destination names are free-form; from the environment they arrive lower-cased
                key = "txbox.destination." + name.substring("TXBOX_DESTINATION_".length()).toLowerCase(Locale.ROOT);
            }
            if (key == null) {
                ignored.add(name);
                continue;
            }
            values.put(key, new Raw(key, e.getValue().trim(), "env " + name));
        }
        return new ConfigSource(values, List.copyOf(ignored));
    }

    /** {@code txbox.jdbc.pool-size} -> {@code TXBOX_JDBC_POOL_SIZE}. */
    static String envName(String key) {
        return key.toUpperCase(Locale.ROOT).replace('.', '_').replace('-', '_');
    }

    /** Every setting, by key, sorted. */
    Map<String, Raw> values() {
        return values;
    }

    /** {@code TXBOX_*} variables that name no key; not fatal, since a service may share its environment with the relay. */
    List<String> ignoredEnv() {
        return ignoredEnv;
    }
}
