package io.txbox.migrations;

import io.txbox.internal.Dialect;
import io.txbox.internal.schema.Txbox;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import io.txbox.internal.shaded.jooq.DataType;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.Table;
import io.txbox.internal.shaded.jooq.UniqueKey;

/**
 * Compares the tables a migration created with the metadata of the generated jOOQ code:
 * tables, columns, column types, nullability, primary and unique keys. Returns every
 * difference, or an empty list. PostgreSQL is compared with {@code io.txbox.internal.schema},
 * MariaDB and MySQL with {@code io.txbox.internal.mariadb.schema}.
 */
final class SchemaDrift {
    private SchemaDrift() {}

    static List<String> between(Connection c, String schema, String prefix) throws SQLException {
        if (Dialect.of(c).isMysqlFamily()) {
            return MariaDbSchemaDrift.between(c, schema, prefix);
        }
        return between(c, schema, prefix, Txbox.TXBOX.getTables(), SchemaDrift::pgColumns, SchemaDrift::liveKeys);
    }

    /** Compares one table's live columns with the generated ones, adding each difference to {@code diffs}. */
    interface Catalog {
        void read(Connection c, String schema, String table, Table<?> gen, List<String> diffs) throws SQLException;
    }

    /** Reads one table's live primary and unique keys as {@code "primary key (a,b)"}, {@code "unique (c)"}. */
    interface Keys {
        TreeSet<String> read(Connection c, String schema, String table) throws SQLException;
    }

    static List<String> between(Connection c, String schema, String prefix, List<Table<?>> tables, Catalog columns,
            Keys keys) throws SQLException {
        List<String> diffs = new ArrayList<>();
        Map<String, Table<?>> generated = new TreeMap<>();
        for (Table<?> t : tables) {
            generated.put(prefix + t.getName().substring("txbox_".length()), t);
        }
        TreeSet<String> live = liveTables(c, schema, prefix);
        for (String name : live) {
            if (!generated.containsKey(name)) {
                diffs.add("table " + name + " exists in the database but not in the generated code");
            }
        }
        for (var e : generated.entrySet()) {
            String name = e.getKey();
            if (!live.contains(name)) {
                diffs.add("table " + name + " is in the generated code but not in the database");
                continue;
            }
            columns.read(c, schema, name, e.getValue(), diffs);
            compareKeys(keys.read(c, schema, name), name, e.getValue(), diffs);
        }
        return diffs;
    }

    static TreeSet<String> liveTables(Connection c, String schema, String prefix) throws SQLException {
        TreeSet<String> out = new TreeSet<>();
        try (PreparedStatement ps = c.prepareStatement(
                "select table_name from information_schema.tables where table_schema = ? and table_type = 'BASE TABLE'")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String t = rs.getString(1);
                    if (t.startsWith(prefix) && !t.equals(prefix + "schema_history")) {
                        out.add(t);
                    }
                }
            }
        }
        return out;
    }

    private static void pgColumns(Connection c, String schema, String table, Table<?> gen, List<String> diffs)
            throws SQLException {
        Map<String, String> live = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement("""
                select a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
                from pg_attribute a join pg_class r on r.oid = a.attrelid join pg_namespace n on n.oid = r.relnamespace
                where n.nspname = ? and r.relname = ? and a.attnum > 0 and not a.attisdropped""")) {
            ps.setString(1, schema);
            ps.setString(2, table);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    live.put(rs.getString(1), rs.getString(2) + (rs.getBoolean(3) ? " not null" : ""));
                }
            }
        }
        Map<String, String> expected = new TreeMap<>();
        for (Field<?> f : gen.fields()) {
            DataType<?> dt = f.getDataType();
            expected.put(f.getName(), pgType(dt) + (dt.nullable() ? "" : " not null"));
        }
        compareColumns(table, live, expected, diffs);
    }

    /** Reports every column that is only live, only generated, or differs in type or nullability. */
    static void compareColumns(String table, Map<String, String> live, Map<String, String> expected, List<String> diffs) {
        for (String col : live.keySet()) {
            if (!expected.containsKey(col)) {
                diffs.add(table + "." + col + " (" + live.get(col) + ") is not in the generated code");
            } else if (!expected.get(col).equals(live.get(col))) {
                diffs.add(table + "." + col + " is " + live.get(col) + " in the database but "
                        + expected.get(col) + " in the generated code");
            }
        }
        for (String col : expected.keySet()) {
            if (!live.containsKey(col)) {
                diffs.add(table + "." + col + " is in the generated code but not in the database");
            }
        }
    }

    private static TreeSet<String> liveKeys(Connection c, String schema, String table) throws SQLException {
        TreeSet<String> live = new TreeSet<>();
        try (PreparedStatement ps = c.prepareStatement("""
                select con.contype, array_to_string(array(
                    select a.attname from unnest(con.conkey) with ordinality k(attnum, ord)
                    join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.attnum order by k.ord), ',')
                from pg_constraint con join pg_class r on r.oid = con.conrelid join pg_namespace n on n.oid = r.relnamespace
                where n.nspname = ? and r.relname = ? and con.contype in ('p', 'u')""")) {
            ps.setString(1, schema);
            ps.setString(2, table);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    live.add(("p".equals(rs.getString(1)) ? "primary key" : "unique") + " (" + rs.getString(2) + ")");
                }
            }
        }
        return live;
    }

    private static void compareKeys(TreeSet<String> live, String table, Table<?> gen, List<String> diffs) {
        TreeSet<String> expected = new TreeSet<>();
        if (gen.getPrimaryKey() != null) {
            expected.add("primary key (" + names(gen.getPrimaryKey()) + ")");
        }
        for (UniqueKey<?> k : gen.getUniqueKeys()) {
            expected.add("unique (" + names(k) + ")");
        }
        if (!live.equals(expected)) {
            diffs.add(table + " keys are " + live + " in the database but " + expected + " in the generated code");
        }
    }

    private static String names(UniqueKey<?> k) {
        return k.getFields().stream().map(Field::getName).collect(Collectors.joining(","));
    }

    /** The name PostgreSQL's format_type gives the type the generated code declares. */
    static String pgType(DataType<?> dt) {
        if (dt.isArray()) {
            return pgType(dt.getArrayComponentDataType()) + "[]";
        }
        String name = dt.getSQLDataType().getTypeName().toLowerCase(java.util.Locale.ROOT);
        return switch (name) {
            case "bigint", "integer", "smallint", "boolean" -> name;
            case "varchar" -> dt.lengthDefined() ? "character varying(" + dt.length() + ")" : "character varying";
            case "clob" -> "text";
            case "blob", "varbinary", "binary" -> "bytea";
            case "timestamp with time zone" -> "timestamp with time zone";
            default -> "unmapped jOOQ type " + name;
        };
    }
}
