package io.txbox.inbox.http;

import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.inbox.Fingerprint;
import io.txbox.inbox.InboundMessage;
import io.txbox.inbox.TwoPhaseStore;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How a request becomes an inbox message, and the fingerprint that tells two requests with one
 * key apart: the request line travels as two headers, and the digest covers them with the body.
 */
final class RequestFingerprint {
    /** Message header names that carry the request line into the fingerprint. */
    static final String METHOD = ":method";
    static final String PATH = ":path";

    private RequestFingerprint() {
    }

    /** The message a keyed request is claimed as. */
    static InboundMessage message(String key, HttpRequestData request, @Nullable String tenant) {
        return InboundMessage.builder(key, request.body())
                .header(METHOD, request.method())
                .header(PATH, request.path())
                .tenant(tenant)
                .build();
    }

    /**
     * Refuses a store whose fingerprint would let a key reused for another request replay the
     * first one's response: two requests that differ only in method, or only in path, must get
     * different fingerprints.
     */
    static void check(TwoPhaseStore store) {
        Fingerprint f = store.fingerprint();
        byte[] get = f.of(probe("GET", "/"));
        byte[] post = f.of(probe("POST", "/"));
        byte[] other = f.of(probe("GET", "/other"));
        if (get == null || Arrays.equals(get, post) || Arrays.equals(get, other)) {
            throw new ConfigException("the two-phase store of consumer " + Texts.quote(store.consumer())
                    + " does not fingerprint the request method and path, so a key reused for another request "
                    + "would replay that request's response; build the inbox (or store) with "
                    + ".fingerprint(HttpIdempotency.fingerprint())");
        }
    }

    private static InboundMessage probe(String method, String path) {
        return InboundMessage.builder("fingerprint-check", new byte[0]).header(METHOD, method).header(PATH, path).build();
    }

    /** SHA-256 over method, path and body, separated so that no two requests share an encoding. */
    static byte[] digest(InboundMessage m) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(Objects.requireNonNull(m.header(METHOD)).getBytes(StandardCharsets.UTF_8));
            digest.update((byte) 0);
            digest.update(Objects.requireNonNull(m.header(PATH)).getBytes(StandardCharsets.UTF_8));
            digest.update((byte) 0);
            return digest.digest(m.payload());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }
}
