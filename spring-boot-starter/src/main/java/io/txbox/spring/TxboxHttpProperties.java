package io.txbox.spring;

import io.txbox.inbox.Inbox;
import io.txbox.inbox.http.HttpIdempotency;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.NestedConfigurationProperty;

/** The {@code txbox.http.*} properties. */
public class TxboxHttpProperties {
    @NestedConfigurationProperty
    private final IdempotencyProperties idempotency = new IdempotencyProperties();

    public IdempotencyProperties getIdempotency() {
        return idempotency;
    }

    /**
     * The {@code txbox.http.idempotency.*} properties: the Spring MVC Idempotency-Key filter,
     * off unless {@code txbox.http.idempotency.enabled=true}; needs {@code txbox-inbox-http}.
     */
    public static class IdempotencyProperties {
        /** Default {@code txbox.http.idempotency.methods}: POST and PATCH. */
        public static final List<String> DEFAULT_METHODS = List.of("POST", "PATCH");

        /**
         * Whether requests carrying an Idempotency-Key run once: the controller and the stored
         * response in one Spring transaction, replays answered from the stored response.
         */
        private boolean enabled;

        /**
         * Consumer name the keys are kept under in the inbox table, apart from the message
         * inbox. Defaults to the inbox consumer (txbox.inbox.consumer) followed by ".http".
         */
        private @Nullable String consumer;

        /** Request methods that go through the filter (any case); other requests pass untouched. */
        private List<String> methods = new ArrayList<>(DEFAULT_METHODS);

        /**
         * Request paths (Ant patterns, after the context path) that go through the filter; other
         * requests pass untouched.
         */
        private List<String> paths = new ArrayList<>(List.of("/**"));

        /** The request header carrying the key. */
        private String headerName = HttpIdempotency.DEFAULT_HEADER;

        /**
         * Whether a filtered request without the key is refused with 400. If false it runs
         * once per call, still in a transaction, with nothing stored.
         */
        private boolean keyRequired = true;

        /**
         * Largest request body, and largest stored response body, in bytes. A larger request
         * gets 413 and the application does not run.
         */
        private int maxBodyBytes = HttpIdempotency.DEFAULT_MAX_BODY_BYTES;

        /**
         * How long a request may run before a retry with its key may run it again; a request
         * that outlives it has its writes rolled back and gets 409.
         */
        private Duration lease = Inbox.DEFAULT_LEASE;

        /**
         * Runs that outlived their lease (the request hung or the process stopped) after which
         * a key is DEAD and answered 500 until an operator resets it. Defaults to no limit,
         * as the Idempotency-Key draft lets every retry run again.
         */
        private int maxAttempts = HttpIdempotency.NO_ATTEMPT_LIMIT;

        /**
         * Response headers stored and replayed with the status and body (any case). Defaults to
         * the representation headers: content-type, content-encoding, content-language,
         * content-location, location, etag, last-modified, link, cache-control.
         */
        private @Nullable Set<String> replayedHeaders;

        /** Order of the filter among the servlet filters; after Spring Security's (-100) by default. */
        private int order;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public @Nullable String getConsumer() {
            return consumer;
        }

        public void setConsumer(@Nullable String consumer) {
            this.consumer = consumer;
        }

        public List<String> getMethods() {
            return methods;
        }

        public void setMethods(List<String> methods) {
            this.methods = methods;
        }

        public List<String> getPaths() {
            return paths;
        }

        public void setPaths(List<String> paths) {
            this.paths = paths;
        }

        public String getHeaderName() {
            return headerName;
        }

        public void setHeaderName(String headerName) {
            this.headerName = headerName;
        }

        public boolean isKeyRequired() {
            return keyRequired;
        }

        public void setKeyRequired(boolean keyRequired) {
            this.keyRequired = keyRequired;
        }

        public int getMaxBodyBytes() {
            return maxBodyBytes;
        }

        public void setMaxBodyBytes(int maxBodyBytes) {
            this.maxBodyBytes = maxBodyBytes;
        }

        public Duration getLease() {
            return lease;
        }

        public void setLease(Duration lease) {
            this.lease = lease;
        }

        public int getMaxAttempts() {
            return maxAttempts;
        }

        public void setMaxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        public @Nullable Set<String> getReplayedHeaders() {
            return replayedHeaders;
        }

        public void setReplayedHeaders(@Nullable Set<String> replayedHeaders) {
            this.replayedHeaders = replayedHeaders;
        }

        public int getOrder() {
            return order;
        }

        public void setOrder(int order) {
            this.order = order;
        }
    }
}
