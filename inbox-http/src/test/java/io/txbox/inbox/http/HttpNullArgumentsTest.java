package io.txbox.inbox.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxException;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.TwoPhaseStore;
import io.txbox.testkit.NullArguments;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Every public method and constructor of the HTTP support's public types refuses a null
 * argument with a txbox exception ({@code InvalidInputException}, or {@code ConfigException}
 * for a builder option) naming the parameter, before any I/O: the data source given beside it
 * fails the test if touched. Parameters documented as accepting null ({@code @Nullable}) are
 * skipped.
 */
class HttpNullArgumentsTest {
    private static final DataSource NO_IO = NullArguments.untouchable(DataSource.class);

    @Test
    void httpApi_nullArgument_isRefusedNamingTheParameter() {
        NullArguments check = NullArguments.expecting(TxboxException.class, HttpNullArgumentsTest::sample, Set.of())
                .methods(HttpIdempotency.class, HttpIdempotency.builder(keys(), NO_IO).build())
                .methods(HttpIdempotency.Builder.class, HttpIdempotency.builder(keys(), NO_IO))
                .methods(HttpRequestData.class, request())
                .constructors(HttpRequestData.class)
                .methods(HttpResponseData.class, HttpResponseData.of(200, "text/plain", "ok"))
                .constructors(HttpResponseData.class);
        assertThat(check.problems()).isEmpty();
        assertThat(check.checked()).isGreaterThan(20);
    }

    /** A valid value of {@code type}, so that only the nulled argument can be refused. */
    private static @Nullable Object sample(Class<?> type) {
        Map<Class<?>, Object> samples = Map.of(String.class, "k", byte[].class, new byte[0], Map.class, Map.of(),
                Set.class, Set.of("content-type"), DataSource.class, NO_IO, Inbox.class, keys(),
                TwoPhaseStore.class, keys().twoPhase(NO_IO), HttpRequestData.class, request());
        return samples.containsKey(type) ? samples.get(type)
                : type.isInterface() ? NullArguments.untouchable(type) : null;
    }

    private static HttpRequestData request() {
        return new HttpRequestData("POST", "/orders", Map.of("Idempotency-Key", List.of("k")), new byte[0]);
    }

    private static Inbox keys() {
        return Inbox.builder("api").fingerprint(HttpIdempotency.fingerprint()).build();
    }
}
