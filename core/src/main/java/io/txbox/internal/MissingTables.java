package io.txbox.internal;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import java.sql.SQLException;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The one rule for a schema that was never migrated: how each database reports a missing table,
 * and the instruction every part of txbox gives instead of {@code relation ... does not exist}
 * (PostgreSQL 42P01) or {@code Table ... doesn't exist} (MariaDB / MySQL 1146).
 */
public final class MissingTables {
    /** PostgreSQL undefined_table. */
    static final String POSTGRES_UNDEFINED_TABLE = "42P01";
    /** MariaDB / MySQL ER_NO_SUCH_TABLE, SQL state 42S02. */
    static final int MYSQL_NO_SUCH_TABLE = 1146;
    static final String MYSQL_NO_SUCH_TABLE_STATE = "42S02";

    private MissingTables() {}

    /** The instruction for a schema without txbox tables. */
    public static String message(TxboxTables tables) {
        return "schema " + tables.schema() + " has no txbox tables: run TxboxMigrations.migrate"
                + " (or `txbox-relay migrate`) first";
    }

    /** Whether {@code e}, or a cause, is a database's "no such table" error, on either database. */
    public static boolean isUndefinedTable(@Nullable Throwable e) {
        SQLException sql = SqlErrors.findSql(e);
        return sql != null && (POSTGRES_UNDEFINED_TABLE.equals(sql.getSQLState())
                || MYSQL_NO_SUCH_TABLE_STATE.equals(sql.getSQLState()) || sql.getErrorCode() == MYSQL_NO_SUCH_TABLE);
    }

    /**
     * Whether {@code e} says one of the txbox tables in {@code tables} is missing, as opposed to
     * a table of the caller's own (a handler's business write in the same transaction).
     */
    public static boolean isTxboxTableMissing(@Nullable Throwable e, TxboxTables tables) {
        if (!isUndefinedTable(e)) {
            return false;
        }
        String text = String.valueOf(SqlErrors.findSql(e).getMessage()).toLowerCase(Locale.ROOT);
        for (String table : List.of(tables.outboxTable(), tables.outboxDeadTable(), tables.inboxTable(),
                tables.outboxKeyHoldTable(), tables.relayLaneTable(), tables.relayMemberTable())) {
            if (text.contains(table.toLowerCase(Locale.ROOT))) {
                return true;
            }
        }
        return false;
    }

    /**
     * {@code e} as a txbox exception: the {@link #message(TxboxTables) instruction} when a txbox
     * table is missing (keeping the SQL state), otherwise {@link SqlErrors#translate(String, Throwable)}.
     */
    public static TxboxException translate(String what, Throwable e, TxboxTables tables) {
        if (!(e instanceof TxboxException) && isTxboxTableMissing(e, tables)) {
            return new TxboxException(what + " failed: " + message(tables), e, SqlErrors.findSql(e).getSQLState());
        }
        return SqlErrors.translate(what, e);
    }
}
