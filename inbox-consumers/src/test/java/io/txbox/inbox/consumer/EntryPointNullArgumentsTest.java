package io.txbox.inbox.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import com.rabbitmq.client.ConnectionFactory;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txbox.ConfigException;
import io.txbox.InvalidInputException;
import io.txbox.TxboxTables;
import io.txbox.inbox.Handler;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.Outcome;
import io.txbox.inbox.consumer.internal.Decision;
import io.txbox.inbox.consumer.internal.Delivery;
import io.txbox.inbox.consumer.internal.DeliveryProcessor;
import io.txbox.inbox.kafka.KafkaInboxConsumer;
import io.txbox.inbox.consumer.micrometer.MicrometerConsumerListener;
import io.txbox.inbox.rabbitmq.RabbitInboxConsumer;
import io.txbox.internal.Backoff;
import io.txbox.testkit.NullArguments;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Calls every public entry point of the broker consumers with one null argument at a time: each must be
 * refused with InvalidInputException or ConfigException whose message names the parameter (or,
 * for a builder option, the option).
 * Parameters annotated {@code @Nullable} (documented as accepting null) are skipped. The
 * DataSource given throws on any use, so a call that touches it before its null check fails.
 */
class EntryPointNullArgumentsTest {
    /** A DataSource that fails the test if anything is asked of it. */
    private static final DataSource NO_IO = NullArguments.untouchable(DataSource.class);

    /** One public method or constructor, and how to get the object it is called on. */
    private record Target(Class<?> type, Executable executable, @Nullable Supplier<Object> receiver) {}

    @TestFactory
    Stream<DynamicTest> consumers_everyPublicEntryPoint_nullArgument_isRefusedNamingTheParameter() {
        List<Target> targets = new ArrayList<>();
        targets.addAll(targets(KafkaInboxConsumer.class, EntryPointNullArgumentsTest::parkingKafkaConsumer));
        targets.addAll(targets(KafkaInboxConsumer.Builder.class, EntryPointNullArgumentsTest::kafkaBuilder));
        targets.addAll(targets(RabbitInboxConsumer.class, EntryPointNullArgumentsTest::parkingRabbitConsumer));
        targets.addAll(targets(RabbitInboxConsumer.Builder.class, EntryPointNullArgumentsTest::rabbitBuilder));
        targets.addAll(targets(Decision.Ack.class, null));
        targets.addAll(targets(Decision.Retry.class, null));
        targets.addAll(targets(Decision.DeadLetter.class, null));
        targets.addAll(targets(Delivery.class, null));
        targets.addAll(targets(DeliveryProcessor.class, EntryPointNullArgumentsTest::processor));
        // its callbacks are called by the consumer, not by users: only the constructor is an entry point
        targets.addAll(targets(MicrometerConsumerListener.class, null).stream()
                .filter(t -> t.executable() instanceof Constructor).toList());
        return probes(targets);
    }

    @Test
    void probes_coverTheDocumentedExamples() {
        List<String> consumers = names(consumers_everyPublicEntryPoint_nullArgument_isRefusedNamingTheParameter());
        assertThat(consumers).contains("KafkaInboxConsumer.Builder.clock(Clock clock = null)",
                "RabbitInboxConsumer.Builder.queue(String queue = null)",
                "DeliveryProcessor.process(Delivery delivery = null)",
                "KafkaInboxConsumer.builder(Inbox inbox = null, DataSource, Handler)");
        assertThat(consumers.size()).isGreaterThan(30);
    }

    private static List<String> names(Stream<DynamicTest> tests) {
        return tests.map(DynamicTest::getDisplayName).toList();
    }

    private static List<Target> targets(Class<?> type, @Nullable Supplier<Object> receiver) {
        Set<Executable> all = new LinkedHashSet<>();
        all.addAll(Arrays.asList(type.getConstructors()));
        for (Method m : type.getMethods()) {
            if (m.getDeclaringClass().getPackageName().startsWith("io.txbox.inbox") && !m.isBridge()) {
                all.add(m);
            }
        }
        for (Method m : type.getDeclaredMethods()) {
            if (Modifier.isPublic(m.getModifiers()) && Modifier.isStatic(m.getModifiers())) {
                all.add(m);
            }
        }
        List<Target> targets = new ArrayList<>();
        for (Executable e : all) {
            if (!e.getName().equals("equals")) {
                targets.add(new Target(type, e, receiver));
            }
        }
        return targets;
    }

    private static Stream<DynamicTest> probes(List<Target> targets) {
        List<DynamicTest> tests = new ArrayList<>();
        for (Target t : targets) {
            Parameter[] params = t.executable().getParameters();
            for (int i = 0; i < params.length; i++) {
                if (params[i].getType().isPrimitive() || params[i].getAnnotatedType().isAnnotationPresent(Nullable.class)) {
                    continue;
                }
                int nulled = i;
                tests.add(dynamicTest(describe(t, nulled), () -> probe(t, nulled)));
            }
        }
        return tests.stream();
    }

    private static void probe(Target t, int nulled) throws Exception {
        Executable e = t.executable();
        Parameter[] params = e.getParameters();
        Object[] args = new Object[params.length];
        for (int i = 0; i < params.length; i++) {
            args[i] = i == nulled ? null : sample(params[i].getType());
        }
        Throwable thrown = null;
        try {
            if (e instanceof Constructor<?> c) {
                c.newInstance(args);
            } else {
                Method m = (Method) e;
                Object on = Modifier.isStatic(m.getModifiers()) ? null : t.receiver().get();
                m.invoke(on, args);
            }
        } catch (InvocationTargetException ex) {
            thrown = ex.getCause();
        }
        assertThat(thrown).as(describe(t, nulled) + " must refuse the null")
                .isInstanceOfAny(InvalidInputException.class, ConfigException.class);
        // a builder option may be named by its property (the setter's name) rather than its parameter
        boolean option = e instanceof Method && params.length == 1 && t.type().getSimpleName().endsWith("Builder");
        assertThat(thrown.getMessage()).as("the message of " + describe(t, nulled))
                .containsAnyOf(params[nulled].getName(), option ? e.getName() : params[nulled].getName());
    }

    private static String describe(Target t, int nulled) {
        Executable e = t.executable();
        StringBuilder sb = new StringBuilder(t.type().getName().substring(t.type().getPackageName().length() + 1)
                .replace('$', '.'));
        if (e instanceof Method) {
            sb.append('.').append(e.getName());
        }
        sb.append('(');
        Parameter[] params = e.getParameters();
        for (int i = 0; i < params.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(params[i].getType().getSimpleName());
            if (i == nulled) {
                sb.append(' ').append(params[i].getName()).append(" = null");
            }
        }
        return sb.append(')').toString();
    }

    /** A valid value of {@code type}, so that only the nulled argument can be refused. */
    private static Object sample(Class<?> type) {
        if (type == int.class) {
            return 1;
        }
        if (type == boolean.class) {
            return false;
        }
        if (type == String.class) {
            return "k";
        }
        if (type == String[].class) {
            return new String[] {"k"};
        }
        if (type == byte[].class) {
            return new byte[0];
        }
        if (type == Object.class) {
            return "v";
        }
        if (type == Map.class) {
            return Map.of();
        }
        if (type == Set.class) {
            return Set.of("k");
        }
        if (type == Collection.class || type == List.class) {
            return List.of("k");
        }
        if (type == Duration.class) {
            return Duration.ofSeconds(1);
        }
        if (type == Clock.class) {
            return Clock.systemUTC();
        }
        if (type == TxboxTables.class) {
            return TxboxTables.defaults();
        }
        if (type == DataSource.class) {
            return NO_IO;
        }
        if (type == Inbox.class) {
            return Inbox.builder("k").build();
        }
        if (type == KeyPolicy.class) {
            return KeyPolicy.DEAD_LETTER;
        }
        if (type == Backoff.class) {
            return new Backoff(ConsumerBuilder.DEFAULT_INITIAL_BACKOFF, ConsumerBuilder.DEFAULT_MAX_BACKOFF);
        }
        if (type == Outcome.class) {
            return new Outcome(Outcome.Status.PROCESSED, null, 1, null, null);
        }
        if (type == Delivery.class) {
            return new Delivery("topic-0@0", null, "k".getBytes(), new byte[0], Map.of(), false);
        }
        if (type == ConnectionFactory.class) {
            return new ConnectionFactory();
        }
        if (type == Exception.class || type == Throwable.class) {
            return new IllegalStateException("sample");
        }
        if (type == MeterRegistry.class) {
            return new SimpleMeterRegistry();
        }
        if (type.isInterface()) {
            return NullArguments.untouchable(type);
        }
        throw new AssertionError("no sample value for " + type.getName() + ": add one");
    }

    private static Object kafkaBuilder() {
        return KafkaInboxConsumer.builder(Inbox.builder("k").build(), NO_IO, NullArguments.untouchable(Handler.class));
    }

    /** A consumer that parks keys, built but never started: building connects to nothing. */
    private static Object parkingKafkaConsumer() {
        return ((KafkaInboxConsumer.Builder) kafkaBuilder()).bootstrapServers("localhost:9092").topics("t")
                .parkKeys(true).build();
    }

    private static Object parkingRabbitConsumer() {
        return ((RabbitInboxConsumer.Builder) rabbitBuilder()).connectionFactory(new com.rabbitmq.client.ConnectionFactory())
                .queue("q").parkKeys(true).build();
    }

    private static Object rabbitBuilder() {
        return RabbitInboxConsumer.builder(Inbox.builder("k").build(), NO_IO, NullArguments.untouchable(Handler.class));
    }

    /** The processor a builder makes; {@code processor()} is for adapters, so it is reached by reflection. */
    private static Object processor() {
        try {
            Method m = ConsumerBuilder.class.getDeclaredMethod("processor");
            m.setAccessible(true);
            return m.invoke(kafkaBuilder());
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }
}
