package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Trace context out of the current span, and spans that continue the context a message carries. */
class OpenTelemetryTracingTest {
    private static final String TRACE = "0af7651916cd43dd8448eb211c80319c";
    private static final String SENDER = "b7ad6b7169203331";
    private static final Map<String, String> CARRIED = Map.of("traceparent", "00-" + TRACE + "-" + SENDER + "-01",
            "tracestate", "vendor=1");

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final OpenTelemetrySdk otel = OpenTelemetrySdk.builder()
            .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
            .build();
    private final Tracing tracing = OpenTelemetryTracing.of(otel);

    @AfterEach
    void close() {
        otel.close();
        GlobalOpenTelemetry.resetForTest();
    }

    @Test
    void current_noSpan_isEmpty() {
        assertThat(Tracing.available()).isTrue();
        assertThat(tracing.current()).isEmpty();
    }

    @Test
    void current_inASpan_isItsW3cHeaders() {
        Span span = otel.getTracer("test").spanBuilder("request").startSpan();
        try (Scope ignored = span.makeCurrent()) {
            assertThat(tracing.current()).containsOnlyKeys("traceparent")
                    .containsEntry("traceparent", "00-" + span.getSpanContext().getTraceId() + "-"
                            + span.getSpanContext().getSpanId() + "-" + span.getSpanContext().getTraceFlags().asHex());
        } finally {
            span.end();
        }
    }

    @Test
    void inSpan_consumer_isChildOfTheCarriedContextAndCurrentWhileItRuns() {
        AtomicReference<Map<String, String>> inside = new AtomicReference<>();
        String result = tracing.inSpan(Tracing.Kind.CONSUMER, "process billing", CARRIED::get,
                Map.of("txbox.key", "k1"), r -> false, () -> {
                    inside.set(tracing.current());
                    return "done";
                });

        SpanData span = spans.getFinishedSpanItems().get(0);
        assertThat(result).isEqualTo("done");
        assertThat(span.getKind()).isEqualTo(SpanKind.CONSUMER);
        assertThat(span.getName()).isEqualTo("process billing");
        assertThat(span.getTraceId()).isEqualTo(TRACE);
        assertThat(span.getParentSpanId()).isEqualTo(SENDER);
        assertThat(span.getSpanContext().getTraceState().get("vendor")).isEqualTo("1");
        assertThat(inside.get()).containsEntry("traceparent", "00-" + TRACE + "-" + span.getSpanId() + "-01")
                .containsEntry("tracestate", "vendor=1");
        assertThat(tracing.current()).as("nothing current after").isEmpty();
    }

    @Test
    void inSpan_workThrows_spanRecordsTheErrorAndTheExceptionPropagates() {
        assertThatThrownBy(() -> tracing.inSpan(Tracing.Kind.CONSUMER, "process billing", CARRIED::get, Map.of(),
                r -> false, () -> {
                    throw new IllegalStateException("boom");
                })).hasMessage("boom");

        SpanData span = spans.getFinishedSpanItems().get(0);
        assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
        assertThat(span.getEvents()).extracting(e -> e.getName()).contains("exception");
    }

    @Test
    void inSpan_failedResult_isAnErrorSpan() {
        tracing.inSpan(Tracing.Kind.SERVER, "POST", CARRIED::get, Map.of(), status -> status >= 500, () -> 503);

        assertThat(spans.getFinishedSpanItems().get(0).getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    }

    @Test
    void inSpan_serverWithASpanAlreadyCurrent_keepsThatSpan() {
        Span framework = otel.getTracer("test").spanBuilder("framework").startSpan();
        try (Scope ignored = framework.makeCurrent()) {
            String seen = tracing.inSpan(Tracing.Kind.SERVER, "POST", CARRIED::get, Map.of(), r -> false,
                    () -> Span.current().getSpanContext().getSpanId());
            assertThat(seen).isEqualTo(framework.getSpanContext().getSpanId());
        } finally {
            framework.end();
        }
        assertThat(spans.getFinishedSpanItems()).extracting(SpanData::getName).containsExactly("framework");
    }

    @Test
    void inSpan_noCarriedContext_startsANewTrace() {
        Function<String, String> none = name -> null;
        tracing.inSpan(Tracing.Kind.SERVER, "GET", none, Map.of(), r -> false, () -> 200);

        SpanData span = spans.getFinishedSpanItems().get(0);
        assertThat(span.getKind()).isEqualTo(SpanKind.SERVER);
        assertThat(span.getTraceId()).isNotEqualTo(TRACE);
        assertThat(span.getParentSpanContext().isValid()).isFalse();
    }

    @Test
    void global_usesTheInstanceInstalledAfterwards() {
        Tracing global = Tracing.global();
        GlobalOpenTelemetry.set(otel);

        global.inSpan(Tracing.Kind.CONSUMER, "process billing", CARRIED::get, Map.of(), r -> false, () -> 1);

        assertThat(spans.getFinishedSpanItems()).extracting(SpanData::getTraceId).containsExactly(TRACE);
    }

    @Test
    void global_nothingInstalled_carriesTheContextOnWithoutRecordingAndLeavesGlobalUnset() {
        String inside = Tracing.global().inSpan(Tracing.Kind.CONSUMER, "process billing", CARRIED::get, Map.of(),
                r -> false, () -> Tracing.global().current().get("traceparent"));

        assertThat(inside).isEqualTo(CARRIED.get("traceparent"));
        assertThat(spans.getFinishedSpanItems()).isEmpty();
        assertThat(GlobalOpenTelemetry.isSet()).as("the application can still install its own").isFalse();
    }
}
