package io.txbox.internal;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A stored result's headers as one byte string, for the key-value stores (Redis, DynamoDB) that
 * keep an entry as a few binary fields: in order, a name may repeat; the count, then (name, value)
 * pairs as length-prefixed UTF-8.
 */
public final class StoredHeaders {
    private StoredHeaders() {}

    /** The headers as bytes; empty for none. */
    public static byte[] encode(@Nullable Map<String, List<String>> headers) {
        if (headers == null || headers.isEmpty()) {
            return new byte[0];
        }
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(buf)) {
            List<String[]> pairs = new ArrayList<>();
            headers.forEach((name, values) -> values.forEach(v -> pairs.add(new String[] {name, v})));
            out.writeInt(pairs.size());
            for (String[] p : pairs) {
                writeString(out, p[0]);
                writeString(out, p[1]);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return buf.toByteArray();
    }

    /** What {@link #encode} wrote, unmodifiable; empty for null or no bytes. */
    public static Map<String, List<String>> decode(byte @Nullable [] bytes) {
        if (bytes == null || bytes.length == 0) {
            return Map.of();
        }
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            int n = in.readInt();
            Map<String, List<String>> headers = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                String name = readString(in);
                headers.computeIfAbsent(name, k -> new ArrayList<>()).add(readString(in));
            }
            headers.replaceAll((k, vs) -> List.copyOf(vs));
            return Collections.unmodifiableMap(headers);
        } catch (IOException e) {
            throw new UncheckedIOException("stored headers are corrupt", e);
        }
    }

    private static void writeString(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }

    private static String readString(DataInputStream in) throws IOException {
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }
}
