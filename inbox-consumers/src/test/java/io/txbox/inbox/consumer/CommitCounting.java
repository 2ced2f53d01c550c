package io.txbox.inbox.consumer;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;

/**
 * A data source whose connections count the statements that carry a COMMIT ahead of the
 * receive: positive once a consumer chained its commits.
 */
public final class CommitCounting {
    public final AtomicInteger chained = new AtomicInteger();
    public final DataSource proxy;

    public CommitCounting(DataSource ds) {
        proxy = proxy(DataSource.class, ds, (m, args, result) -> m.getName().equals("getConnection")
                ? proxy(Connection.class, result, (cm, cargs, cresult) -> {
                    if (cm.getName().equals("prepareStatement") && String.valueOf(cargs[0]).startsWith("COMMIT;")) {
                        chained.incrementAndGet();
                    }
                    return cresult;
                })
                : result);
    }

    private interface After {
        Object apply(Method m, Object[] args, Object result);
    }

    @SuppressWarnings("unchecked")
    private static <T> T proxy(Class<T> type, Object target, After after) {
        return (T) Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (p, m, args) -> {
            try {
                return after.apply(m, args, m.invoke(target, args));
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        });
    }
}
