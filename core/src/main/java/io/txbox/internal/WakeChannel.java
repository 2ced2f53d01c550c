package io.txbox.internal;

import io.txbox.TxboxTables;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * How an outbox's sends wake the relays that publish its table, on a database with LISTEN/NOTIFY
 * ({@link Dialect#hasNotify()}): the sender runs {@link #NOTIFY_SQL} with the table's channel, the
 * relay {@link #listenSql listens} on it. The payload is empty, so PostgreSQL folds the
 * notifications of one transaction into one, delivered when it commits.
 */
public final class WakeChannel {
    /** Longest channel name PostgreSQL keeps (NAMEDATALEN - 1). */
    static final int MAX_LENGTH = 63;
    /** The sender's statement; binds the channel. */
    public static final String NOTIFY_SQL = "SELECT pg_notify(?, '')";

    private WakeChannel() {}

    /**
     * The channel of {@code tables}' outbox: {@code schema.table}, or, where that is too long for
     * PostgreSQL, the table's name and a digest of both, still one channel per outbox table.
     */
    public static String of(TxboxTables tables) {
        String qualified = tables.schema() + "." + tables.outboxTable();
        if (qualified.length() <= MAX_LENGTH) {
            return qualified;
        }
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(qualified.getBytes(StandardCharsets.UTF_8));
            return tables.outboxTable() + "_" + HexFormat.of().formatHex(digest, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }

    /** The relay's statement, on a connection in auto-commit mode; names are checked by {@link TxboxTables}. */
    public static String listenSql(TxboxTables tables) {
        return "LISTEN \"" + of(tables) + "\"";
    }
}
