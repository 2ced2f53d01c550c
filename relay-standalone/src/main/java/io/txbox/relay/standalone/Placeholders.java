package io.txbox.relay.standalone;

import io.txbox.relay.Publisher;
import io.txbox.relay.Route;
import java.lang.reflect.Proxy;
import javax.sql.DataSource;

/**
 * Stand-ins that let {@link RelayConfig} run {@code Relay.Builder.build()} for its checks across
 * options before the process has a database or a broker. Building never calls them; any call
 * fails loudly.
 */
final class Placeholders {
    private Placeholders() {}

    static DataSource dataSource() {
        return unusable(DataSource.class);
    }

    static Route route() {
        return Route.of(unusable(Publisher.class), "placeholder");
    }

    private static <T> T unusable(Class<T> type) {
        Object proxy = Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (self, method, args) ->
                switch (method.getName()) {
                    case "hashCode" -> System.identityHashCode(self);
                    case "equals" -> self == args[0];
                    case "toString" -> "placeholder " + type.getSimpleName();
                    default -> throw new UnsupportedOperationException(
                            "a configuration check's placeholder " + type.getSimpleName() + " was used: " + method.getName());
                });
        return type.cast(proxy);
    }
}
