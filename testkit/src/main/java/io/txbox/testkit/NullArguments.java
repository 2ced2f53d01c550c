package io.txbox.testkit;

import java.lang.reflect.AnnotatedType;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Checks that an API rejects null arguments: every public method (and, on request, constructor)
 * of a type is called once per reference parameter with {@code null} in that place and a sample
 * value everywhere else, and must throw an exception of the expected type whose message names
 * the parameter. Parameters annotated {@code @Nullable} (JSpecify) are left out, and so is
 * anything listed in {@code skip} as {@code Type.member(parameter)}.
 *
 * <p>Names come from the class files, so the API must be compiled with {@code -parameters}. A
 * message "names" a parameter when, lower-cased and without spaces, it contains the parameter's
 * name lower-cased ({@code "step key is missing"} names {@code stepKey}).
 */
public final class NullArguments {
    private final Class<? extends Throwable> expected;
    private final Function<Class<?>, @Nullable Object> samples;
    private final Set<String> skip;
    private final List<String> problems = new ArrayList<>();
    private int checked;

    /**
     * An implementation of the interface {@code type} that fails the test when anything but
     * {@code equals}, {@code hashCode} or {@code toString} is called: a connection or data source
     * to pass beside the null, proving the null is refused before any I/O.
     */
    public static <T> T untouchable(Class<T> type) {
        return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
                (p, m, a) -> switch (m.getName()) {
                    case "hashCode" -> System.identityHashCode(p);
                    case "equals" -> p == a[0];
                    case "toString" -> "untouchable " + type.getSimpleName();
                    default -> throw new AssertionError("touched the " + type.getSimpleName()
                            + " before checking the arguments: " + m);
                }));
    }

    private NullArguments(Class<? extends Throwable> expected, Function<Class<?>, @Nullable Object> samples,
            Set<String> skip) {
        this.expected = expected;
        this.samples = samples;
        this.skip = skip;
    }

    /**
     * A checker that expects {@code expected} and fills other parameters from {@code samples}
     * (which returns null for a type it has no sample of).
     */
    public static NullArguments expecting(Class<? extends Throwable> expected,
            Function<Class<?>, @Nullable Object> samples, Set<String> skip) {
        return new NullArguments(expected, samples, skip);
    }

    /**
     * Checks the public methods {@code type} declares or inherits from other API types, on
     * {@code target} for instance methods (static methods need none). Methods of
     * {@link Object}, {@code equals} and synthetic methods are left out.
     */
    public NullArguments methods(Class<?> type, @Nullable Object target) {
        for (Method m : type.getMethods()) {
            if (m.getDeclaringClass() == Object.class || m.isSynthetic() || m.isBridge()
                    || m.getName().equals("equals") || (target == null && !Modifier.isStatic(m.getModifiers()))
                    || (m.getDeclaringClass().isEnum() && Modifier.isStatic(m.getModifiers()))) {
                continue;
            }
            check(type, m, target);
        }
        return this;
    }

    /** Checks the public constructors of {@code type}. */
    public NullArguments constructors(Class<?> type) {
        for (Constructor<?> c : type.getConstructors()) {
            check(type, c, null);
        }
        return this;
    }

    /** How many calls with a null argument were made. */
    public int checked() {
        return checked;
    }

    /** One line per parameter that was not rejected as expected; empty when all were. */
    public List<String> problems() {
        return List.copyOf(problems);
    }

    private void check(Class<?> type, Executable e, @Nullable Object target) {
        Parameter[] params = e.getParameters();
        AnnotatedType[] types = e.getAnnotatedParameterTypes();
        for (int i = 0; i < params.length; i++) {
            Parameter p = params[i];
            String name = type.getSimpleName() + "." + (e instanceof Constructor ? "new" : e.getName())
                    + "(" + p.getName() + ")";
            if (p.getType().isPrimitive() || nullable(types[i], p) || nullableComponent(e, i) || skip.contains(name)) {
                continue;
            }
            if (!p.isNamePresent()) {
                problems.add(name + ": no parameter names in the class file; compile with -parameters");
                continue;
            }
            Object[] args = new Object[params.length];
            for (int j = 0; j < params.length; j++) {
                args[j] = j == i ? null : sample(params[j].getType(), name);
            }
            checked++;
            Throwable thrown = invoke(e, target, args);
            String wanted = p.getName().toLowerCase(Locale.ROOT);
            if (thrown == null) {
                problems.add(name + ": accepted null");
            } else if (!expected.isInstance(thrown)) {
                problems.add(name + ": threw " + thrown + ", not " + expected.getSimpleName());
            } else if (thrown.getMessage() == null
                    || !thrown.getMessage().toLowerCase(Locale.ROOT).replace(" ", "").contains(wanted)) {
                problems.add(name + ": message does not name " + p.getName() + ": " + thrown.getMessage());
            }
        }
    }

    private static boolean nullable(AnnotatedType type, Parameter p) {
        return Arrays.stream(type.getAnnotations()).anyMatch(a -> a.annotationType() == Nullable.class)
                || Arrays.stream(p.getAnnotations()).anyMatch(a -> a.annotationType() == Nullable.class);
    }

    /**
     * A record's canonical constructor does not always carry a component's type annotation
     * ({@code byte @Nullable []}), so the component itself is asked as well.
     */
    private static boolean nullableComponent(Executable e, int index) {
        Class<?> owner = e.getDeclaringClass();
        if (!(e instanceof Constructor) || !owner.isRecord()) {
            return false;
        }
        var components = owner.getRecordComponents();
        if (components.length != e.getParameterCount()
                || !Arrays.equals(Arrays.stream(components).map(c -> c.getType()).toArray(), e.getParameterTypes())) {
            return false;
        }
        return Arrays.stream(components[index].getAnnotatedType().getAnnotations())
                .anyMatch(a -> a.annotationType() == Nullable.class);
    }

    private Object sample(Class<?> type, String where) {
        if (type == int.class) {
            return 1;
        }
        if (type == long.class) {
            return 1L;
        }
        if (type == boolean.class) {
            return false;
        }
        Object value = samples.apply(type);
        if (value == null) {
            throw new IllegalArgumentException("no sample value of " + type.getName() + " for " + where);
        }
        return value;
    }

    private static @Nullable Throwable invoke(Executable e, @Nullable Object target, Object[] args) {
        try {
            if (e instanceof Method m) {
                m.invoke(target, args);
            } else {
                ((Constructor<?>) e).newInstance(args);
            }
            return null;
        } catch (InvocationTargetException ex) {
            return ex.getCause();
        } catch (ReflectiveOperationException ex) {
            throw new IllegalStateException("cannot call " + e, ex);
        }
    }
}
