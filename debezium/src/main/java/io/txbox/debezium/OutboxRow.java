package io.txbox.debezium;

import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.DataException;

/**
 * Reads the columns of a txbox outbox row from a change event's {@code after} struct, whatever
 * type the connector gave them: PostgreSQL's {@code text[]} header columns arrive as lists,
 * MariaDB's and MySQL's JSON ones as strings; {@code captured} as a boolean or a tinyint.
 */
final class OutboxRow {
    private OutboxRow() {}

    static Object required(Struct row, String column) {
        Object v = value(row, column);
        if (v == null) {
            throw new DataException("txbox outbox column " + column + " is null in a captured row");
        }
        return v;
    }

    static String string(Struct row, String column, boolean required) {
        Object v = required ? required(row, column) : value(row, column);
        return v == null ? null : v.toString();
    }

    static boolean captured(Struct row) {
        Object v = value(row, "captured");
        if (v instanceof Boolean b) {
            return b;
        }
        if (v instanceof Number n) {
            return n.intValue() != 0;
        }
        return false;
    }

    /** A header column: empty when null, a list's strings, or a JSON array's. */
    static List<String> strings(Struct row, String column) {
        Object v = value(row, column);
        if (v == null) {
            return List.of();
        }
        if (v instanceof List<?> list) {
            List<String> out = new ArrayList<>(list.size());
            for (Object o : list) {
                if (o == null) {
                    throw new DataException("txbox outbox column " + column + " holds a null element");
                }
                out.add(o.toString());
            }
            return out;
        }
        try {
            return JsonStringArray.parse(v.toString());
        } catch (IllegalArgumentException e) {
            throw new DataException("txbox outbox column " + column + ": " + e.getMessage(), e);
        }
    }

    private static Object value(Struct row, String column) {
        Field f = row.schema().field(column);
        if (f == null) {
            throw new DataException("the captured table has no column " + column + ": it is not a txbox outbox"
                    + " table at migration version 6 or later; point table.include.list at the outbox and run"
                    + " the txbox migrations");
        }
        return row.get(f);
    }
}
