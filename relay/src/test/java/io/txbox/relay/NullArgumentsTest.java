package io.txbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.ConnectionFactory;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.ConfigException;
import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.outbox.Outbox;
import io.txbox.relay.kafka.KafkaPublisher;
import io.txbox.relay.micrometer.RelayMetrics;
import io.txbox.relay.rabbitmq.RabbitPublisher;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.lang.reflect.Proxy;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Every public method and constructor of the relay's public packages rejects a null argument
 * that is not declared {@code @Nullable}, before any I/O, with a txbox exception naming the
 * parameter. Types are found by scanning the compiled packages, so a new public method is
 * covered without touching this test. Callback interfaces ({@link Publisher}, {@link
 * RelayListener}) are checked through the implementations txbox ships; their default methods
 * are no-ops the relay itself calls.
 */
class NullArgumentsTest {
    static final List<String> PACKAGES = List.of("io.txbox.relay", "io.txbox.relay.kafka", "io.txbox.relay.rabbitmq",
            "io.txbox.relay.micrometer");

    @TestFactory
    Stream<DynamicTest> publicApi_nullArgument_rejectedNamingTheParameter() throws Exception {
        List<DynamicTest> tests = new ArrayList<>();
        for (Class<?> type : publicTypes()) {
            for (Executable e : executables(type)) {
                Parameter[] params = e.getParameters();
                for (int i = 0; i < params.length; i++) {
                    if (params[i].getType().isPrimitive() || nullable(e, i)) {
                        continue;
                    }
                    int nullAt = i;
                    tests.add(DynamicTest.dynamicTest(type.getSimpleName() + "." + name(e) + "(" + params[i].getName() + " = null)",
                            () -> assertRejects(e, nullAt)));
                }
            }
        }
        assertThat(tests).hasSizeGreaterThan(40);
        return tests.stream();
    }

    @Test
    void scan_findsThePublicTypesOfEveryPackage() throws Exception {
        assertThat(publicTypes()).contains(Relay.Builder.class, DeadLetters.class, KafkaPublisher.class,
                KafkaPublisher.Builder.class, RabbitPublisher.class, RabbitPublisher.Builder.class, RelayMetrics.class,
                Route.class, PublishRecord.class);
    }

    static void assertRejects(Executable e, int nullAt) throws Exception {
        Parameter[] params = e.getParameters();
        Object[] args = new Object[params.length];
        for (int i = 0; i < params.length; i++) {
            args[i] = i == nullAt ? null : sample(params[i].getType());
        }
        Throwable thrown = null;
        try {
            if (e instanceof Constructor<?> c) {
                c.newInstance(args);
            } else {
                Method m = (Method) e;
                m.invoke(Modifier.isStatic(m.getModifiers()) ? null : receiver(m.getDeclaringClass()), args);
            }
        } catch (InvocationTargetException ite) {
            thrown = ite.getCause();
        }
        String parameter = params[nullAt].getName();
        assertThat(thrown).as("%s with null %s", e, parameter).isNotNull()
                .isInstanceOfAny(InvalidInputException.class, ConfigException.class);
        // the name in the message is the parameter's, or the one the implemented interface documents
        String message = thrown.getMessage().toLowerCase(java.util.Locale.ROOT);
        assertThat(message).as("%s with null %s: %s", e, parameter, thrown.getMessage()).contains("null")
                .containsAnyOf(names(e, nullAt).stream().map(n -> n.toLowerCase(java.util.Locale.ROOT)).toArray(String[]::new));
        assertThat(thrown.getMessage()).doesNotContain("NullPointerException");
    }

    static List<String> names(Executable e, int index) {
        List<String> names = new ArrayList<>();
        names.add(e.getParameters()[index].getName());
        if (e instanceof Method m) {
            for (Class<?> i : m.getDeclaringClass().getInterfaces()) {
                try {
                    names.add(i.getMethod(m.getName(), m.getParameterTypes()).getParameters()[index].getName());
                } catch (NoSuchMethodException ignored) {
                    // not an interface method
                }
            }
        }
        return names;
    }

    static String name(Executable e) {
        return e instanceof Constructor<?> ? "new" : e.getName();
    }

    static boolean nullable(Executable e, int index) {
        Parameter p = e.getParameters()[index];
        if (p.isAnnotationPresent(Nullable.class) || p.getAnnotatedType().isAnnotationPresent(Nullable.class)) {
            return true;
        }
        // a record's canonical constructor: the annotation may sit on the component only
        Class<?> type = e.getDeclaringClass();
        return e instanceof Constructor<?> && type.isRecord() && type.getRecordComponents().length == e.getParameterCount()
                && type.getRecordComponents()[index].getAnnotatedType().isAnnotationPresent(Nullable.class);
    }

    /** Public constructors and the public methods each type declares itself (equals takes null by contract). */
    static List<Executable> executables(Class<?> type) {
        List<Executable> all = new ArrayList<>();
        if (!type.isInterface() && !Modifier.isAbstract(type.getModifiers())) {
            for (Constructor<?> c : type.getConstructors()) {
                all.add(c);
            }
        }
        for (Method m : type.getDeclaredMethods()) {
            if (!Modifier.isPublic(m.getModifiers()) || m.isSynthetic() || m.getName().equals("equals")
                    || (type.isEnum() && m.getName().equals("valueOf"))) {
                continue;
            }
            if (type.isInterface() && (m.isDefault() || (!Modifier.isStatic(m.getModifiers()) && receiver(type) == null))) {
                continue; // callbacks: implemented by the user, called by the relay
            }
            all.add(m);
        }
        return all;
    }

    static List<Class<?>> publicTypes() throws IOException, URISyntaxException, ClassNotFoundException {
        Path root = Path.of(Relay.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<Class<?>> types = new ArrayList<>();
        for (String pkg : PACKAGES) {
            Path dir = root.resolve(pkg.replace('.', '/'));
            List<Path> files;
            try (Stream<Path> s = Files.list(dir)) {
                files = s.filter(f -> f.toString().endsWith(".class")).sorted().toList();
            }
            for (Path f : files) {
                String simple = f.getFileName().toString().replace(".class", "");
                if (simple.equals("package-info") || simple.matches(".*\\$\\d.*")) {
                    continue;
                }
                Class<?> c = Class.forName(pkg + "." + simple);
                if (isPublic(c)) {
                    types.add(c);
                }
            }
        }
        return types;
    }

    static boolean isPublic(Class<?> c) {
        for (Class<?> t = c; t != null; t = t.getEnclosingClass()) {
            if (!Modifier.isPublic(t.getModifiers())) {
                return false;
            }
        }
        return true;
    }

    /** An instance to call instance methods on; none for callback interfaces. No I/O happens on any of them. */
    static @Nullable Object receiver(Class<?> type) {
        if (type == Relay.class) {
            return Relay.builder().dataSource(proxy(DataSource.class)).route("d", Route.of(proxy(Publisher.class), "t")).build();
        }
        if (type == Relay.Builder.class) {
            return Relay.builder();
        }
        if (type == DeadLetters.class) {
            return DeadLetters.of(proxy(DataSource.class), TxboxTables.defaults());
        }
        if (type == KafkaPublisher.class) {
            return KafkaPublisher.of(new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer()));
        }
        if (type == KafkaPublisher.Builder.class) {
            return KafkaPublisher.builder();
        }
        if (type == RabbitPublisher.class) {
            return RabbitPublisher.builder().connection(proxy(com.rabbitmq.client.Connection.class)).build();
        }
        if (type == RabbitPublisher.Builder.class) {
            return RabbitPublisher.builder();
        }
        if (type == RelayMetrics.class) {
            return RelayMetrics.of(new SimpleMeterRegistry());
        }
        if (type == Route.class) {
            return Route.of(proxy(Publisher.class), "t");
        }
        if (type == RelayOption.class) {
            return RelayOption.WORKERS;
        }
        if (type == PublishRecord.class) {
            return sample(PublishRecord.class);
        }
        if (type.isRecord() || Throwable.class.isAssignableFrom(type)) {
            return null; // their methods take no reference arguments
        }
        if (type.isInterface()) {
            return null;
        }
        throw new AssertionError("no instance of " + type + " to check its methods on: add one here");
    }

    static Object sample(Class<?> t) {
        if (t == int.class || t == long.class) {
            return t == int.class ? (Object) 1 : (Object) 1L;
        }
        if (t == boolean.class) {
            return false;
        }
        if (t == String.class) {
            return "x";
        }
        if (t == Duration.class) {
            return Duration.ofSeconds(1);
        }
        if (t == TxboxTables.class) {
            return TxboxTables.defaults();
        }
        if (t == Route.class) {
            return Route.of(proxy(Publisher.class), "t");
        }
        if (t == PublishRecord.class) {
            return new PublishRecord(1, "k:s", "k", "d", null, new byte[0], Map.of(), null, null, null, 0, Instant.EPOCH);
        }
        if (t == Map.class) {
            return Map.of();
        }
        if (t == List.class || t == Collection.class) {
            return List.of();
        }
        if (t == Set.class) {
            return Set.of();
        }
        if (t == Instant.class) {
            return Instant.EPOCH;
        }
        if (t == Clock.class) {
            return Clock.systemUTC();
        }
        if (t == LongSupplier.class) {
            return (LongSupplier) System::nanoTime;
        }
        if (t == RandomGenerator.class) {
            return new SplittableRandom(1);
        }
        if (t == byte[].class) {
            return new byte[0];
        }
        if (t == Outbox.class) {
            return Outbox.builder().build();
        }
        if (t == ConnectionFactory.class) {
            return new ConnectionFactory();
        }
        if (t == MeterRegistry.class) {
            return new SimpleMeterRegistry();
        }
        if (t == Throwable.class) {
            return new RuntimeException("sample");
        }
        if (t == Object.class) { // a RelayOption's value, its type erased: the receiver is RelayOption.WORKERS
            return 1;
        }
        if (t == RelayStatus.State.class || t.isEnum()) {
            return t.getEnumConstants()[0];
        }
        if (t.isInterface()) {
            return proxy(t);
        }
        throw new AssertionError("no sample value of " + t + ": add one here");
    }

    /**
     * An implementation that answers every call with a harmless default (another such proxy for
     * an interface result), so the code under test gets as far as it would with a real one.
     */
    @SuppressWarnings("unchecked")
    static <T> T proxy(Class<T> type) {
        return (T) Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (p, m, a) -> {
            Class<?> r = m.getReturnType();
            if (m.getName().equals("toString")) {
                return "proxy " + type.getSimpleName();
            }
            if (m.getName().equals("hashCode")) {
                return System.identityHashCode(p);
            }
            if (m.getName().equals("equals")) {
                return p == a[0];
            }
            if (r == boolean.class) {
                return false;
            }
            if (r == int.class || r == long.class || r == short.class || r == byte.class) {
                return r == int.class ? (Object) 0 : r == long.class ? (Object) 0L : r == short.class ? (Object) (short) 0 : (Object) (byte) 0;
            }
            if (r == double.class || r == float.class) {
                return r == double.class ? (Object) 0.0 : (Object) 0.0f;
            }
            if (r == String.class) {
                return "proxy";
            }
            if (r.isInterface()) {
                return proxy(r);
            }
            return null;
        });
    }
}
