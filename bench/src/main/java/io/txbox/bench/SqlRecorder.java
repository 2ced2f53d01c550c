package io.txbox.bench;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Wraps a connection and writes down what the code under test does with it: the SQL text of
 * every statement it prepares, and how many executes and commits it sends (each one a network
 * round trip on PostgreSQL). Used once per run to capture the SQL txbox issues, so the "by hand"
 * side of a comparison runs exactly the same text; never on the measured path.
 */
final class SqlRecorder {
    final List<String> prepared = new ArrayList<>();
    int executes;
    int commits;

    Connection wrap(Connection target) {
        return (Connection) Proxy.newProxyInstance(SqlRecorder.class.getClassLoader(), new Class<?>[] {Connection.class},
                new ConnectionHandler(target));
    }

    /** A data source whose connections are wrapped as {@link #wrap(Connection)} wraps one. */
    DataSource wrap(DataSource target) {
        return (DataSource) Proxy.newProxyInstance(SqlRecorder.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, m, args) -> {
                    Object result = call(target, m, args);
                    return result instanceof Connection c ? wrap(c) : result;
                });
    }

    int roundTrips() {
        return executes + commits;
    }

    private final class ConnectionHandler implements InvocationHandler {
        private final Connection target;

        ConnectionHandler(Connection target) {
            this.target = target;
        }

        @Override
        public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
            String name = m.getName();
            if (name.equals("commit")) {
                commits++;
            }
            if (name.equals("prepareStatement") && args != null && args[0] instanceof String sql) {
                prepared.add(sql);
            }
            Object result = call(target, m, args);
            if (result instanceof PreparedStatement ps) {
                return wrapStatement(ps, PreparedStatement.class);
            }
            if (result instanceof Statement s) {
                return wrapStatement(s, Statement.class);
            }
            return result;
        }
    }

    private Object wrapStatement(Statement s, Class<?> type) {
        return Proxy.newProxyInstance(SqlRecorder.class.getClassLoader(), new Class<?>[] {type}, (proxy, m, args) -> {
            if (m.getName().startsWith("execute")) {
                executes++;
                if (args != null && args.length > 0 && args[0] instanceof String sql) {
                    prepared.add(sql);
                }
            }
            return call(s, m, args);
        });
    }

    private static Object call(Object target, Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
