package io.txbox;

import java.util.regex.Pattern;

/**
 * Where the txbox tables live: a schema and a table-name prefix. Both are checked against a
 * strict identifier pattern when created, so a name can never carry SQL.
 *
 * <p>The defaults give {@code public.txbox_inbox}, {@code public.txbox_outbox} and so on. On
 * MariaDB and MySQL the schema is a database.
 *
 * <p>The length caps keep every name txbox makes inside the identifier limits of each supported
 * database: 63 characters on PostgreSQL, 64 on MariaDB and MySQL. The longest is the prefix plus
 * {@code outbox_step_key_uq}, at most {@value #MAX_PREFIX_LENGTH} + 18 characters.
 *
 * @param schema schema name: lower-case letter or underscore first, then lower-case letters,
 *     digits or underscores, at most {@value #MAX_SCHEMA_LENGTH} characters
 * @param prefix table-name prefix, same alphabet, at most {@value #MAX_PREFIX_LENGTH}
 *     characters; may be empty
 */
public record TxboxTables(String schema, String prefix) {
    /** Default schema: {@value}. */
    public static final String DEFAULT_SCHEMA = "public";
    /** Default table prefix: {@value}. */
    public static final String DEFAULT_PREFIX = "txbox_";
    /** Longest schema name: {@value}, within PostgreSQL's 63 and MariaDB's / MySQL's 64. */
    public static final int MAX_SCHEMA_LENGTH = 48;
    /** Longest prefix: {@value}, so prefix + the longest table or index suffix stays within both limits. */
    public static final int MAX_PREFIX_LENGTH = 24;

    private static final Pattern SCHEMA = Pattern.compile("[a-z_][a-z0-9_]*");
    private static final Pattern PREFIX = Pattern.compile("([a-z_][a-z0-9_]*)?");

    public TxboxTables {
        if (schema == null || !SCHEMA.matcher(schema).matches() || schema.length() > MAX_SCHEMA_LENGTH) {
            throw new ConfigException("schema must match " + SCHEMA + " and be at most "
                    + MAX_SCHEMA_LENGTH + " characters, but was " + Texts.quote(schema));
        }
        if (prefix == null || !PREFIX.matcher(prefix).matches() || prefix.length() > MAX_PREFIX_LENGTH) {
            throw new ConfigException("table prefix must match " + PREFIX + " and be at most "
                    + MAX_PREFIX_LENGTH + " characters, but was " + Texts.quote(prefix));
        }
    }

    /** {@code public} and {@code txbox_}. */
    public static TxboxTables defaults() {
        return new TxboxTables(DEFAULT_SCHEMA, DEFAULT_PREFIX);
    }

    /** The given schema with the default prefix. */
    public static TxboxTables inSchema(String schema) {
        return new TxboxTables(schema, DEFAULT_PREFIX);
    }

    public String inboxTable() {
        return prefix + "inbox";
    }

    public String outboxTable() {
        return prefix + "outbox";
    }

    public String outboxDeadTable() {
        return prefix + "outbox_dead";
    }

    /** The relay's per-key holds: routing keys held back at a failing or dead-lettered row. */
    public String outboxKeyHoldTable() {
        return prefix + "outbox_key_hold";
    }

    public String relayLaneTable() {
        return prefix + "relay_lane";
    }

    public String relayMemberTable() {
        return prefix + "relay_member";
    }

    /** Flyway history table used by {@code TxboxMigrations.migrate}. */
    public String historyTable() {
        return prefix + "schema_history";
    }

    /**
     * {@code "schema"."table"}, quoted as PostgreSQL quotes identifiers (MariaDB and MySQL read
     * double quotes as identifiers only with {@code ANSI_QUOTES}); safe because both parts were
     * validated.
     */
    public String qualified(String table) {
        io.txbox.internal.Args.notNull(table, "table");
        return '"' + schema + "\".\"" + table + '"';
    }
}
