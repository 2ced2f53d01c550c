package io.txbox.inbox;

import io.txbox.Texts;
import io.txbox.internal.OptionalDependency;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Refuses the calls that would split a Spring transaction's commit, for applications that use
 * Spring's transactions with the plain library (no starter):
 * <ul>
 *   <li>{@code process} and {@code processChained} inside an active Spring transaction: they
 *       commit the entry and the handler's work on a connection of their own, so writes made
 *       through Spring, and a rollback of its transaction, go their own way and a redelivery
 *       answers DUPLICATE for work that was rolled back;</li>
 *   <li>any call that commits a transaction of its own, given a {@code TransactionAwareDataSourceProxy}
 *       inside an active Spring transaction: the proxy hands out the Spring transaction's
 *       connection, so the call's commit would commit the Spring transaction halfway.</li>
 * </ul>
 * The other calls that commit on their own (a two-phase claim, its completion or failure,
 * {@code recordFailure}) keep doing so inside a Spring transaction: that is what they are for,
 * as a claim must outlive a rollback.
 *
 * <p>Spring is looked for once, by name, without loading it: with no {@code spring-tx} on the
 * classpath, each check is one read of a constant and no Spring class is ever loaded.
 */
final class SpringTransactionGuard {
    private static final boolean PRESENT =
            OptionalDependency.present("org.springframework.transaction.support.TransactionSynchronizationManager");

    private SpringTransactionGuard() {}

    /** Refuses {@code call} inside an active Spring transaction: it commits its work apart from it. */
    static void refuseInside(String call, String consumer) {
        if (PRESENT && Spring.active()) {
            throw new IllegalStateException(call + " of consumer " + Texts.quote(consumer) + " was called inside an"
                    + " active Spring transaction and refused; nothing was written. It commits the inbox entry and the"
                    + " handler's work on a connection of its own, so writes made through Spring (JdbcTemplate, JPA)"
                    + " and a rollback of the Spring transaction would not go with it, and a redelivery would be"
                    + " answered DUPLICATE for work that was rolled back. Call TxboxTemplate.process(message, handler)"
                    + " (txbox-spring-boot-starter), which runs in the Spring transaction, or call Inbox.receive on"
                    + " the Spring-managed connection (DataSourceUtils.getConnection(dataSource)) and do the work"
                    + " there, or call process outside the transaction");
        }
    }

    /**
     * Refuses {@code call} on {@code ds} when {@code ds} is (or wraps) Spring's
     * {@code TransactionAwareDataSourceProxy} inside an active Spring transaction: its commit
     * would commit the Spring transaction halfway.
     */
    static void refuseTransactionalProxy(DataSource ds, String call, String consumer) {
        if (PRESENT && Spring.transactionalProxy(ds)) {
            throw new IllegalStateException(call + " of consumer " + Texts.quote(consumer) + " was given a"
                    + " TransactionAwareDataSourceProxy inside an active Spring transaction and refused; nothing was"
                    + " written. The proxy hands out the Spring transaction's own connection, so this call's commit"
                    + " would commit the Spring transaction halfway. Pass the proxy's target DataSource for a"
                    + " transaction of its own, or, to write in the Spring transaction, call"
                    + " TxboxTemplate.process(message, handler) (txbox-spring-boot-starter) or Inbox.receive on the"
                    + " Spring-managed connection (DataSourceUtils.getConnection(dataSource))");
        }
    }

    /** Spring's side, through method handles; loaded only when spring-tx is on the classpath. */
    private static final class Spring {
        private static final @Nullable MethodHandle ACTIVE = active("org.springframework.transaction.support"
                + ".TransactionSynchronizationManager");
        /** {@code null} without spring-jdbc. */
        private static final @Nullable Class<?> PROXY =
                type("org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy");

        private static @Nullable MethodHandle active(String manager) {
            Class<?> type = type(manager);
            if (type == null) {
                return null;
            }
            try {
                return MethodHandles.publicLookup().findStatic(type, "isActualTransactionActive",
                        MethodType.methodType(boolean.class));
            } catch (ReflectiveOperationException | LinkageError e) {
                return null;
            }
        }

        private static @Nullable Class<?> type(String name) {
            try {
                return Class.forName(name, true, SpringTransactionGuard.class.getClassLoader());
            } catch (ClassNotFoundException | LinkageError e) {
                return null;
            }
        }

        static boolean active() {
            if (ACTIVE == null) {
                return false;
            }
            try {
                return (boolean) ACTIVE.invokeExact();
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable e) {
                throw new IllegalStateException(e); // isActualTransactionActive declares no checked exception
            }
        }

        static boolean transactionalProxy(DataSource ds) {
            if (PROXY == null || !active()) {
                return false;
            }
            if (PROXY.isInstance(ds)) {
                return true;
            }
            try {
                return ds.isWrapperFor(PROXY);
            } catch (SQLException e) {
                return false;
            }
        }
    }
}
