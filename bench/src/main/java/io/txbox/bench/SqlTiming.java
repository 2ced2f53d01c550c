package io.txbox.bench;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.ObjLongConsumer;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * {@code --trace-sql}: a data source wrapper that times every execute and commit per SQL text,
 * so a run can say where its database time goes (round trips per batch, milliseconds per
 * statement). Costs a little CPU per call; figures taken with it are marked as traced.
 */
final class SqlTiming {
    private final Map<String, Stat> stats = new ConcurrentHashMap<>();
    private final ObjLongConsumer<String> observer;

    SqlTiming() {
        this((sql, nanos) -> {});
    }

    /** {@code observer} also sees every timed call (SQL text or COMMIT/ROLLBACK, nanoseconds), for percentiles. */
    SqlTiming(ObjLongConsumer<String> observer) {
        this.observer = observer;
    }

    static final class Stat {
        final LongAdder count = new LongAdder();
        final LongAdder nanos = new LongAdder();
    }

    DataSource wrap(DataSource target) {
        return new DataSource() {
            @Override
            public Connection getConnection() throws SQLException {
                return connection(target.getConnection());
            }

            @Override
            public Connection getConnection(String u, String p) throws SQLException {
                return connection(target.getConnection(u, p));
            }

            @Override
            public PrintWriter getLogWriter() throws SQLException {
                return target.getLogWriter();
            }

            @Override
            public void setLogWriter(PrintWriter out) throws SQLException {
                target.setLogWriter(out);
            }

            @Override
            public void setLoginTimeout(int seconds) throws SQLException {
                target.setLoginTimeout(seconds);
            }

            @Override
            public int getLoginTimeout() throws SQLException {
                return target.getLoginTimeout();
            }

            @Override
            public Logger getParentLogger() throws SQLFeatureNotSupportedException {
                return target.getParentLogger();
            }

            @Override
            public <T> T unwrap(Class<T> iface) throws SQLException {
                return target.unwrap(iface);
            }

            @Override
            public boolean isWrapperFor(Class<?> iface) throws SQLException {
                return target.isWrapperFor(iface);
            }
        };
    }

    private Connection connection(Connection c) {
        return (Connection) Proxy.newProxyInstance(SqlTiming.class.getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, m, args) -> {
                    String name = m.getName();
                    if (name.equals("commit") || name.equals("rollback")) {
                        return timed(name.toUpperCase(), c, m, args);
                    }
                    Object r = call(c, m, args);
                    if (name.equals("prepareStatement") && r instanceof java.sql.PreparedStatement ps) {
                        return statement(ps, java.sql.PreparedStatement.class, (String) args[0]);
                    }
                    if (name.equals("createStatement") && r instanceof Statement s) {
                        return statement(s, Statement.class, null);
                    }
                    return r;
                });
    }

    private Object statement(Statement s, Class<?> type, String sql) {
        return Proxy.newProxyInstance(SqlTiming.class.getClassLoader(), new Class<?>[] {type}, (proxy, m, args) -> {
            if (m.getName().startsWith("execute")) {
                String text = sql != null ? sql : args != null && args.length > 0 ? String.valueOf(args[0]) : "?";
                return timed(text, s, m, args);
            }
            return call(s, m, args);
        });
    }

    private Object timed(String key, Object target, Method m, Object[] args) throws Throwable {
        long t0 = System.nanoTime();
        try {
            return call(target, m, args);
        } finally {
            long nanos = System.nanoTime() - t0;
            Stat st = stats.computeIfAbsent(key, k -> new Stat());
            st.count.increment();
            st.nanos.add(nanos);
            observer.accept(key, nanos);
        }
    }

    private static Object call(Object target, Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** Per statement: calls, total ms, mean ms; biggest total first. */
    List<Map<String, Object>> summary() {
        List<Map.Entry<String, Stat>> entries = new ArrayList<>(stats.entrySet());
        entries.sort((a, b) -> Long.compare(b.getValue().nanos.sum(), a.getValue().nanos.sum()));
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map.Entry<String, Stat> e : entries) {
            long n = e.getValue().count.sum();
            long ns = e.getValue().nanos.sum();
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("sql", shorten(e.getKey()));
            row.put("calls", n);
            row.put("total_ms", Report.round(ns / 1e6, 1));
            row.put("mean_ms", Report.round(n == 0 ? 0 : ns / 1e6 / n, 3));
            out.add(row);
        }
        return out;
    }

    String table() {
        StringBuilder sb = new StringBuilder(String.format("%8s %10s %9s  %s%n", "calls", "total ms", "mean ms", "statement"));
        for (Map<String, Object> r : summary()) {
            sb.append(String.format("%8d %10.1f %9.3f  %s%n", r.get("calls"), r.get("total_ms"), r.get("mean_ms"), r.get("sql")));
        }
        return sb.toString();
    }

    private static String shorten(String sql) {
        String s = sql.replaceAll("\\s+", " ").replaceAll("\"[a-z0-9_]+\"\\.", "");
        // the head names the statement, the tail tells its variants apart (a claim above an id, a chained claim)
        return s.length() > 150 ? s.substring(0, 70) + " ... " + s.substring(s.length() - 75) : s;
    }
}
