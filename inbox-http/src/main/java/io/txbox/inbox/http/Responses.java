package io.txbox.inbox.http;

import io.txbox.Texts;
import io.txbox.TxboxException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.TwoPhaseStore;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What both forms of {@link HttpIdempotency} share: the answers the helper makes itself
 * (replays, failures), the headers a stored response keeps, and releasing the claim of a run
 * that is not stored. Logs under {@link HttpIdempotency}'s name, with the consumer in every line.
 */
final class Responses {
    private static final Logger log = LoggerFactory.getLogger(HttpIdempotency.class);

    private final TwoPhaseStore store;
    private final String headerName;
    private final Set<String> replayedHeaders;

    /** {@code replayedHeaders} in lower case. */
    Responses(TwoPhaseStore store, String headerName, Set<String> replayedHeaders) {
        this.store = store;
        this.headerName = headerName;
        this.replayedHeaders = Set.copyOf(replayedHeaders);
    }

    /** The consumer that prefixes every log line. */
    String consumer() {
        return store.consumer();
    }

    /** The request header carrying the key, as the answers name it. */
    String headerName() {
        return headerName;
    }

    /** The 500 for a handler that threw: logged here, never revealed to the client. */
    HttpResponseData failed(HttpRequestData request, Exception e) {
        log.error("{} - request handler failed for {} {}", store.consumer(), request.method(), request.path(), e);
        return Problems.problem(500, "Internal Server Error", "The request failed. It was not recorded; "
                + "a retry with the same " + headerName + " runs it again.");
    }

    /** The 503 for a database failure, {@code what} saying what became of the request. */
    HttpResponseData unavailable(String what) {
        return withHeader(Problems.problem(503, "Service Unavailable",
                what + " Retry later with the same " + headerName + "."), "Retry-After", "1");
    }

    /** The headers of {@code headers} that are stored and replayed. */
    Map<String, List<String>> replayed(Map<String, List<String>> headers) {
        Map<String, List<String>> kept = new LinkedHashMap<>();
        headers.forEach((name, values) -> {
            if (replayedHeaders.contains(name.toLowerCase(Locale.ROOT))) {
                kept.put(name, values);
            }
        });
        return kept;
    }

    /** Releases {@code claim} so that a retry runs again; a failure leaves it to the lease. */
    void releaseQuietly(Claim claim) {
        try {
            store.release(claim);
        } catch (LeaseLostException e) {
            log.info("{} - key {} not released: completed or taken over meanwhile", store.consumer(),
                    Texts.quote(claim.key()));
        } catch (TxboxException e) {
            log.error("{} - key {} not released; a retry after the lease runs it again: {}", store.consumer(),
                    Texts.quote(claim.key()), e.toString());
        }
    }

    /** The response stored with {@code claim}, marked as a replay. */
    static HttpResponseData replay(Claim claim) {
        return withHeader(new HttpResponseData(claim.resultStatus() == null ? 200 : claim.resultStatus(),
                claim.resultHeaders(), claim.result()), HttpIdempotency.REPLAYED_HEADER, "true");
    }

    private static HttpResponseData withHeader(HttpResponseData r, String name, String value) {
        Map<String, List<String>> headers = new LinkedHashMap<>(r.headers());
        headers.put(name, List.of(value));
        return new HttpResponseData(r.status(), headers, r.body());
    }
}
