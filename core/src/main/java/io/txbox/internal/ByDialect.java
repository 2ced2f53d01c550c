package io.txbox.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Function;

/**
 * A component chosen by the database a connection talks to, made once from the first connection
 * it is given and kept: a store learns its dialect from the caller's connection instead of opening
 * one when it is built, so building never needs the database up.
 */
public final class ByDialect<T> {
    private final Function<Dialect, T> factory;
    private volatile T value;

    public ByDialect(Function<Dialect, T> factory) {
        this.factory = Args.notNull(factory, "factory");
    }

    /** The component for {@code c}'s database; the first call reads the dialect ({@link Dialect#of(Connection)}). */
    public T on(Connection c) throws SQLException {
        T v = value;
        if (v == null) {
            synchronized (this) {
                v = value;
                if (v == null) {
                    v = factory.apply(Dialect.of(c));
                    value = v;
                }
            }
        }
        return v;
    }

    /** The component if a connection has been seen, else null. */
    public T resolved() {
        return value;
    }
}
