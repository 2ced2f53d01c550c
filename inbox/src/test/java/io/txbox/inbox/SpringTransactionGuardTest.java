package io.txbox.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** The Spring transaction checks in an application without Spring: they load nothing of it. */
class SpringTransactionGuardTest {
    /**
     * Defines txbox's classes itself, from the test's class path, and finds no Spring class,
     * noting each one asked for: an application without spring-tx.
     */
    static final class WithoutSpring extends ClassLoader {
        final List<String> springAskedFor = new CopyOnWriteArrayList<>();

        WithoutSpring(ClassLoader parent) {
            super(parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (name.startsWith("org.springframework.")) {
                springAskedFor.add(name);
                throw new ClassNotFoundException(name);
            }
            if (!name.startsWith("io.txbox.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    try (InputStream in = getParent().getResourceAsStream(name.replace('.', '/') + ".class")) {
                        if (in == null) {
                            throw new ClassNotFoundException(name);
                        }
                        byte[] bytes = in.readAllBytes();
                        c = defineClass(name, bytes, 0, bytes.length);
                    } catch (IOException e) {
                        throw new ClassNotFoundException(name, e);
                    }
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }

        boolean defined(String name) {
            return findLoadedClass(name) != null;
        }
    }

    @Test
    void checks_withoutSpringOnTheClassPath_passAndLoadNoSpringClass() throws Exception {
        WithoutSpring loader = new WithoutSpring(getClass().getClassLoader());
        Class<?> checks = Class.forName(SpringTransactionGuard.class.getName(), true, loader);
        Method inside = checks.getDeclaredMethod("refuseInside", String.class, String.class);
        Method proxy = checks.getDeclaredMethod("refuseTransactionalProxy", DataSource.class, String.class,
                String.class);
        inside.setAccessible(true);
        proxy.setAccessible(true);
        DataSource untouchable = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {DataSource.class}, (p, method, args) -> {
                    throw new AssertionError("the check called the data source: " + method);
                });
        for (int i = 0; i < 3; i++) {
            inside.invoke(null, "Inbox.process(DataSource, ..)", "orders");
            proxy.invoke(null, untouchable, "Inbox.claim(DataSource, ..)", "orders");
        }
        assertThat(loader.springAskedFor).as("Spring looked for once, by name")
                .containsExactly("org.springframework.transaction.support.TransactionSynchronizationManager");
        assertThat(loader.defined(SpringTransactionGuard.class.getName() + "$Spring"))
                .as("the Spring side is never loaded").isFalse();
    }
}
