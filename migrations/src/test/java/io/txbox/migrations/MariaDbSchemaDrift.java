package io.txbox.migrations;

import io.txbox.internal.mariadb.schema.Txbox;
import io.txbox.internal.shaded.jooq.DataType;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.Table;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/** {@link SchemaDrift} on MariaDB and MySQL, read from {@code information_schema}. */
final class MariaDbSchemaDrift {
    private MariaDbSchemaDrift() {}

    static List<String> between(Connection c, String schema, String prefix) throws SQLException {
        return SchemaDrift.between(c, schema, prefix, Txbox.TXBOX.getTables(), MariaDbSchemaDrift::columns,
                MariaDbSchemaDrift::keys);
    }

    private static void columns(Connection c, String schema, String table, Table<?> gen, List<String> diffs)
            throws SQLException {
        Set<String> jsonChecked = jsonColumns(c, schema, table);
        Map<String, String> live = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement("""
                select column_name, column_type, data_type, is_nullable from information_schema.columns
                where table_schema = ? and table_name = ?""")) {
            ps.setString(1, schema);
            ps.setString(2, table);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String name = rs.getString(1);
                    // MariaDB's json is longtext with a json_valid check; MySQL's is a type of its own
                    String type = jsonChecked.contains(name) ? "json" : withoutDisplayWidth(rs.getString(2));
                    live.put(name, type + ("NO".equals(rs.getString(4)) ? " not null" : ""));
                }
            }
        }
        Map<String, String> expected = new TreeMap<>();
        for (Field<?> f : gen.fields()) {
            DataType<?> dt = f.getDataType();
            expected.put(f.getName(), mariadbType(dt) + (dt.nullable() ? "" : " not null"));
        }
        SchemaDrift.compareColumns(table, live, expected, diffs);
    }

    /** MariaDB prints {@code int(11)} and {@code bigint(20)}, MySQL 8 {@code int}: compare without the width. */
    private static String withoutDisplayWidth(String columnType) {
        return columnType.toLowerCase(Locale.ROOT).replaceAll("^(tinyint|smallint|mediumint|int|bigint)\\(\\d+\\)", "$1");
    }

    private static Set<String> jsonColumns(Connection c, String schema, String table) throws SQLException {
        Set<String> out = new HashSet<>();
        // MariaDB names the implicit check of a json column after the column
        try (PreparedStatement ps = c.prepareStatement("""
                select constraint_name, check_clause from information_schema.check_constraints
                where constraint_schema = ? and table_name = ?""")) {
            ps.setString(1, schema);
            ps.setString(2, table);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getString(2).toLowerCase(Locale.ROOT).startsWith("json_valid(")) {
                        out.add(rs.getString(1));
                    }
                }
            }
        } catch (SQLException e) {
            // MySQL has no table_name column there, and needs none: its json is a type of its own
        }
        return out;
    }

    private static TreeSet<String> keys(Connection c, String schema, String table) throws SQLException {
        Map<String, String> kinds = new LinkedHashMap<>();
        Map<String, StringBuilder> columns = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement("""
                select tc.constraint_name, tc.constraint_type, k.column_name
                from information_schema.table_constraints tc
                join information_schema.key_column_usage k on k.constraint_schema = tc.constraint_schema
                    and k.table_name = tc.table_name and k.constraint_name = tc.constraint_name
                where tc.table_schema = ? and tc.table_name = ? and tc.constraint_type in ('PRIMARY KEY', 'UNIQUE')
                order by tc.constraint_name, k.ordinal_position""")) {
            ps.setString(1, schema);
            ps.setString(2, table);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    kinds.put(rs.getString(1), "PRIMARY KEY".equals(rs.getString(2)) ? "primary key" : "unique");
                    StringBuilder cols = columns.computeIfAbsent(rs.getString(1), k -> new StringBuilder());
                    cols.append(cols.length() == 0 ? "" : ",").append(rs.getString(3));
                }
            }
        }
        TreeSet<String> live = new TreeSet<>();
        kinds.forEach((name, kind) -> live.add(kind + " (" + columns.get(name) + ")"));
        return live;
    }

    /** The column type MariaDB's information_schema gives the type the generated code declares. */
    static String mariadbType(DataType<?> dt) {
        String name = dt.getSQLDataType().getTypeName().toLowerCase(Locale.ROOT);
        return switch (name) {
            case "bigint", "smallint", "json" -> name;
            case "integer" -> "int";
            // MariaDB and MySQL keep BOOLEAN as tinyint(1)
            case "boolean" -> "tinyint";
            case "varchar" -> dt.lengthDefined() ? "varchar(" + dt.length() + ")" : "varchar";
            case "clob" -> "longtext";
            case "blob" -> "longblob";
            case "timestamp" -> "timestamp(" + dt.precision() + ")";
            default -> "unmapped jOOQ type " + name;
        };
    }
}
