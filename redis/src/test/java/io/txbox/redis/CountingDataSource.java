package io.txbox.redis;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/** Counts the connections borrowed from a pool: every inbox call borrows one per database transaction. */
final class CountingDataSource {
    private CountingDataSource() {}

    static DataSource counting(DataSource ds, AtomicLong borrowed) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection")) {
                        borrowed.incrementAndGet();
                    }
                    try {
                        return method.invoke(ds, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
