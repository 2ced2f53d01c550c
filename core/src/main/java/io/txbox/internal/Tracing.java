package io.txbox.internal;

import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * W3C trace context for the outbox, the consumer runners and the HTTP helper, through
 * OpenTelemetry when its API ({@code io.opentelemetry:opentelemetry-api}) is on the classpath.
 * Without it every call is a no-op and no OpenTelemetry class is loaded: this class names none,
 * and {@link OpenTelemetryTracing}, which does, is reached only after the check.
 */
public abstract class Tracing {
    /** The W3C trace context header: {@value}. */
    public static final String TRACEPARENT = "traceparent";
    /** The W3C trace state header: {@value}. */
    public static final String TRACESTATE = "tracestate";

    private static final boolean PRESENT = OptionalDependency.present("io.opentelemetry.api.GlobalOpenTelemetry");
    private static final Tracing NONE = new None();

    /** The kinds of span txbox starts. */
    public enum Kind {
        /** An HTTP request, when no other instrumentation traces it already. */
        SERVER,
        /** A delivery handled by a consumer runner. */
        CONSUMER
    }

    /** The work a span wraps. */
    @FunctionalInterface
    public interface Work<T, E extends Exception> {
        T run() throws E;
    }

    /**
     * Tracing through {@code GlobalOpenTelemetry} (looked up at each span, so an instance
     * installed after txbox was built is used), or none without the OpenTelemetry API.
     */
    public static Tracing global() {
        return PRESENT ? OpenTelemetryTracing.globalInstance() : NONE;
    }

    /** Whether the OpenTelemetry API is on the classpath. */
    public static boolean available() {
        return PRESENT;
    }

    /**
     * The W3C headers ({@value #TRACEPARENT}, and {@value #TRACESTATE} when not empty) of the
     * span current on this thread; empty when no valid span is current.
     */
    public abstract Map<String, String> current();

    /**
     * Runs {@code work} inside a new span of {@code kind} named {@code name}, made current for
     * its duration, so that what {@code work} sends carries it. Its parent is the context the
     * W3C headers read through {@code header} carry, else the current one. A {@link Kind#SERVER}
     * span is started only when no span is current: a server already traced by its own
     * instrumentation keeps its span. The span records an exception thrown by {@code work},
     * and a result {@code failed} accepts, as an error.
     *
     * @param header the value of a header by name (any case), or null
     * @param attributes string attributes of the span
     */
    public abstract <T, E extends Exception> T inSpan(Kind kind, String name, Function<String, @Nullable String> header,
            Map<String, String> attributes, Predicate<? super T> failed, Work<T, E> work) throws E;

    private static final class None extends Tracing {
        @Override
        public Map<String, String> current() {
            return Map.of();
        }

        @Override
        public <T, E extends Exception> T inSpan(Kind kind, String name, Function<String, @Nullable String> header,
                Map<String, String> attributes, Predicate<? super T> failed, Work<T, E> work) throws E {
            return work.run();
        }
    }
}
