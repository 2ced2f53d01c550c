package io.txbox.internal;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * {@link Tracing} on the OpenTelemetry API. Loaded only once {@link Tracing} has seen the API
 * on the classpath. The trace context travels as W3C {@code traceparent} / {@code tracestate}
 * whatever propagators the instance has, because those are the headers the outbox stores.
 */
public final class OpenTelemetryTracing extends Tracing {
    /** The instrumentation scope of txbox's spans: {@value}. */
    public static final String SCOPE = "io.txbox";

    private static final OpenTelemetryTracing GLOBAL = new OpenTelemetryTracing(null);
    private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();
    private static final TextMapGetter<Function<String, @Nullable String>> GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Function<String, @Nullable String> carrier) {
            return List.of(TRACEPARENT, TRACESTATE);
        }

        @Override
        public @Nullable String get(Function<String, @Nullable String> carrier, String key) {
            return carrier == null ? null : carrier.apply(key);
        }
    };
    /** False when the API predates {@code GlobalOpenTelemetry.getOrNoop()} (1.57). */
    private static final boolean GET_OR_NOOP = hasGetOrNoop();

    private final @Nullable Tracer tracer;

    private OpenTelemetryTracing(@Nullable OpenTelemetry openTelemetry) {
        this.tracer = openTelemetry == null ? null : openTelemetry.getTracer(SCOPE);
    }

    static Tracing globalInstance() {
        return GLOBAL;
    }

    /** Tracing through {@code openTelemetry} instead of the global instance. */
    public static Tracing of(OpenTelemetry openTelemetry) {
        return new OpenTelemetryTracing(Args.configured(openTelemetry, "openTelemetry"));
    }

    @Override
    public Map<String, String> current() {
        Context context = Context.current();
        if (!Span.fromContext(context).getSpanContext().isValid()) {
            return Map.of();
        }
        Map<String, String> headers = new HashMap<>(4);
        W3C.inject(context, headers, (carrier, key, value) -> carrier.put(key, value));
        return headers;
    }

    @Override
    public <T, E extends Exception> T inSpan(Kind kind, String name, Function<String, @Nullable String> header,
            Map<String, String> attributes, Predicate<? super T> failed, Work<T, E> work) throws E {
        if (kind == Kind.SERVER && Span.current().getSpanContext().isValid()) {
            return work.run();
        }
        Context parent = W3C.extract(Context.current(), header, GETTER);
        SpanBuilder builder = tracer().spanBuilder(name)
                .setSpanKind(kind == Kind.SERVER ? SpanKind.SERVER : SpanKind.CONSUMER)
                .setParent(parent);
        attributes.forEach(builder::setAttribute);
        Span span = builder.startSpan();
        try (Scope ignored = parent.with(span).makeCurrent()) {
            T result = work.run();
            if (failed.test(result)) {
                span.setStatus(StatusCode.ERROR);
            }
            return result;
        } catch (Throwable e) {
            span.recordException(e);
            span.setStatus(StatusCode.ERROR, e.getClass().getName());
            throw e;
        } finally {
            span.end();
        }
    }

    private Tracer tracer() {
        if (tracer != null) {
            return tracer;
        }
        // getOrNoop, unlike get, never installs a no-op that would refuse the application's own set(..) later.
        // Without it, a no-op tracer still carries the incoming context on: the trace id flows, no span is recorded.
        return (GET_OR_NOOP ? GlobalOpenTelemetry.getOrNoop() : OpenTelemetry.noop()).getTracer(SCOPE);
    }

    private static boolean hasGetOrNoop() {
        try {
            GlobalOpenTelemetry.class.getMethod("getOrNoop");
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }
}
