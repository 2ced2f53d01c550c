package io.txbox.spring;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;

/**
 * A {@link DataSource} whose every connection is a new transaction of the application's
 * transaction manager (propagation REQUIRES_NEW), bound to the calling thread: while it is
 * open, {@code JdbcTemplate}, JPA repositories and {@code @Transactional} services on that
 * thread join it. {@code commit()} commits it, {@code rollback()} rolls it back, and
 * {@code close()} rolls it back unless it has ended. This is how the transactional form of
 * {@code HttpIdempotency} runs a Spring MVC request: the request's writes and its stored
 * response commit together.
 */
final class SpringTransactions extends DelegatingDataSource {
    private final PlatformTransactionManager transactionManager;
    private final TransactionDefinition definition =
            new DefaultTransactionDefinition(TransactionDefinition.PROPAGATION_REQUIRES_NEW);

    SpringTransactions(DataSource dataSource, PlatformTransactionManager transactionManager) {
        super(dataSource);
        this.transactionManager = transactionManager;
    }

    @Override
    public Connection getConnection() throws SQLException {
        TransactionStatus status = transactionManager.getTransaction(definition);
        Connection connection;
        try {
            connection = DataSourceUtils.getConnection(obtainTargetDataSource());
        } catch (RuntimeException e) {
            transactionManager.rollback(status);
            throw new SQLException("no connection for the Spring transaction: " + e.getMessage(), e);
        }
        Transaction tx = new Transaction(connection, status);
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                tx);
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        throw new SQLFeatureNotSupportedException("the Spring transaction's connection has the data source's credentials");
    }

    /**
     * Flushes the transaction of {@code connection} (a JPA persistence context writes its
     * changes now, so a constraint violation fails the request rather than its commit), and
     * refuses a transaction marked rollback-only, which could not commit.
     *
     * @throws IllegalStateException if the transaction is marked rollback-only
     */
    static void flush(Connection connection) {
        if (Proxy.isProxyClass(connection.getClass())
                && Proxy.getInvocationHandler(connection) instanceof Transaction tx) {
            if (tx.status.isRollbackOnly()) {
                throw new IllegalStateException("the request's transaction was marked rollback-only (a @Transactional"
                        + " method it called failed); nothing is committed or stored");
            }
            tx.status.flush();
        }
    }

    /** One transaction: its connection, until commit, rollback or close ends it. */
    private final class Transaction implements InvocationHandler {
        private final Connection connection;
        private final TransactionStatus status;
        private boolean ended;

        Transaction(Connection connection, TransactionStatus status) {
            this.connection = connection;
            this.status = status;
        }

        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            switch (method.getName()) {
                case "commit":
                    end(true);
                    return null;
                case "rollback":
                    if (args == null) {
                        end(false);
                        return null;
                    }
                    break;
                case "close":
                    if (!ended) {
                        end(false);
                    }
                    return null;
                case "isClosed":
                    return ended;
                case "getAutoCommit":
                    return false;
                case "setAutoCommit":
                    if ((Boolean) args[0]) {
                        throw new SQLException("the Spring transaction's connection stays out of auto-commit mode");
                    }
                    return null;
                case "equals":
                    return proxy == args[0];
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "toString":
                    return "SpringTransaction[" + connection + "]";
                default:
                    break;
            }
            if (ended) {
                throw new SQLException("the Spring transaction has ended; " + method.getName() + " is not possible");
            }
            try {
                return method.invoke(connection, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }

        /** Hands the connection back to Spring, then commits or rolls back the transaction. */
        private void end(boolean commit) throws SQLException {
            if (ended) {
                throw new SQLException("the Spring transaction has already ended");
            }
            ended = true;
            DataSourceUtils.releaseConnection(connection, obtainTargetDataSource());
            try {
                if (commit) {
                    transactionManager.commit(status);
                } else {
                    transactionManager.rollback(status);
                }
            } catch (RuntimeException e) {
                throw new SQLException("the Spring transaction failed to " + (commit ? "commit" : "roll back") + ": "
                        + e.getMessage(), e);
            }
        }
    }
}
