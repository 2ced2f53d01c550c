package io.txbox.internal;

import io.txbox.ConfigException;
import io.txbox.Texts;
import io.txbox.TxboxException;
import io.txbox.internal.shaded.jooq.SQLDialect;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The database families txbox runs on, told apart from a live connection, with the oldest
 * version each needs. Internal: the one home for "which database is this".
 */
public enum Dialect {
    /** PostgreSQL, any version the driver speaks to. */
    POSTGRESQL("PostgreSQL", SQLDialect.POSTGRES, 0, 0),
    /** MariaDB 10.6 or later: the first with {@code SKIP LOCKED}. */
    MARIADB("MariaDB", SQLDialect.MARIADB, 10, 6),
    /** MySQL 8.0 or later: the first with {@code SKIP LOCKED}. */
    MYSQL("MySQL", SQLDialect.MYSQL, 8, 0);

    private static final Pattern VERSION = Pattern.compile("^(\\d+)\\.(\\d+)");

    private final String product;
    private final SQLDialect jooq;
    private final int minMajor;
    private final int minMinor;

    Dialect(String product, SQLDialect jooq, int minMajor, int minMinor) {
        this.product = product;
        this.jooq = jooq;
        this.minMajor = minMajor;
        this.minMinor = minMinor;
    }

    /** The product name, as in messages: {@code PostgreSQL}, {@code MariaDB}, {@code MySQL}. */
    public String product() {
        return product;
    }

    /** The jOOQ dialect that renders this family's SQL. */
    public SQLDialect jooq() {
        return jooq;
    }

    /** Whether this is MariaDB or MySQL, which share one set of scripts and one store SQL. */
    public boolean isMysqlFamily() {
        return this != POSTGRESQL;
    }

    /**
     * Whether a transaction's {@code COMMIT} travels in one round trip with the next transaction's
     * first statement (pgjdbc sends {@code COMMIT; BEGIN; INSERT ...} together), so that running
     * messages one transaction each on one connection saves a round trip per message.
     */
    public boolean chainsCommits() {
        return this == POSTGRESQL;
    }

    /**
     * Whether one transaction may receive several inbox entries before it stores any of their
     * results. Not on MariaDB and MySQL: there the inbox knows its transaction by savepoints,
     * and storing a result releases the savepoints of the receives after it, so each message
     * must be received at its turn.
     */
    public boolean receivesAheadOfResults() {
        return this == POSTGRESQL;
    }

    /**
     * Whether {@code INSERT ... RETURNING} returns the rows written, also from an upsert
     * ({@code ON CONFLICT} / {@code ON DUPLICATE KEY UPDATE}): PostgreSQL, and MariaDB from 10.5;
     * MySQL has no {@code RETURNING}.
     */
    public boolean insertReturning() {
        return this != MYSQL;
    }

    /** Whether the database has LISTEN/NOTIFY, which lets a send wake the relays at once ({@link WakeChannel}). */
    public boolean hasNotify() {
        return this == POSTGRESQL;
    }

    /** The oldest supported version, {@code "10.6"}; empty for PostgreSQL. */
    public String minimumVersion() {
        return this == POSTGRESQL ? "" : minMajor + "." + minMinor;
    }

    /**
     * The dialect of the database {@code dataSource} connects to, after checking its version.
     *
     * @throws ConfigException naming the database and version found, and what txbox needs, if it
     *     is not PostgreSQL, MariaDB 10.6+ or MySQL 8.0+
     * @throws TxboxException if no connection can be opened
     */
    public static Dialect of(DataSource dataSource) {
        Args.notNull(dataSource, "dataSource");
        try (Connection c = dataSource.getConnection()) {
            return of(c);
        } catch (SQLException e) {
            throw SqlErrors.translate("finding out which database the DataSource connects to", e);
        }
    }

    /** As {@link #of(DataSource)}, on an open connection that stays open. */
    public static Dialect of(Connection connection) throws SQLException {
        Args.notNull(connection, "connection");
        String product = connection.getMetaData().getDatabaseProductName();
        String version = connection.getMetaData().getDatabaseProductVersion();
        String lower = product == null ? "" : product.toLowerCase(Locale.ROOT);
        if (lower.contains("mysql") || lower.contains("mariadb")) {
            // A MySQL driver on MariaDB says "MySQL"; VERSION() says what the server really is.
            try (Statement st = connection.createStatement(); ResultSet rs = st.executeQuery("SELECT VERSION()")) {
                rs.next();
                version = rs.getString(1);
            }
        }
        return of(product, version);
    }

    /**
     * The dialect for a product name and version string as JDBC metadata and {@code VERSION()}
     * give them, e.g. {@code ("MariaDB", "10.11.19-MariaDB-0+deb12u1")}.
     *
     * @throws ConfigException for any other database, or a version older than supported
     */
    public static Dialect of(String productName, String version) {
        String product = String.valueOf(productName);
        String v = String.valueOf(version);
        String lower = product.toLowerCase(Locale.ROOT);
        Dialect dialect;
        if (lower.contains("postgresql")) {
            return POSTGRESQL;
        } else if (v.toLowerCase(Locale.ROOT).contains("mariadb") || lower.contains("mariadb")) {
            dialect = MARIADB;
        } else if (lower.contains("mysql")) {
            dialect = MYSQL;
        } else {
            throw new ConfigException("txbox runs on PostgreSQL, MariaDB " + MARIADB.minimumVersion()
                    + "+ and MySQL " + MYSQL.minimumVersion() + "+, but the DataSource connects to "
                    + product + " " + v + ": point it at one of those");
        }
        Matcher m = VERSION.matcher(v);
        if (!m.find()) {
            throw new ConfigException("txbox cannot read the version of " + dialect.product + " from "
                    + Texts.quote(v) + "; it needs " + dialect.product + " " + dialect.minimumVersion() + " or later");
        }
        int major = Integer.parseInt(m.group(1));
        int minor = Integer.parseInt(m.group(2));
        if (major < dialect.minMajor || (major == dialect.minMajor && minor < dialect.minMinor)) {
            throw new ConfigException("txbox needs " + dialect.product + " " + dialect.minimumVersion()
                    + " or later (for SELECT ... FOR UPDATE SKIP LOCKED), but the server is "
                    + dialect.product + " " + v + ": upgrade the server");
        }
        return dialect;
    }
}
