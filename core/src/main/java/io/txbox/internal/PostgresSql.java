package io.txbox.internal;

import io.txbox.internal.shaded.jooq.DataType;
import io.txbox.internal.shaded.jooq.Field;
import io.txbox.internal.shaded.jooq.Query;
import io.txbox.internal.shaded.jooq.Table;
import io.txbox.internal.shaded.jooq.conf.ParamType;
import io.txbox.internal.shaded.jooq.impl.DSL;
import io.txbox.internal.shaded.jooq.impl.SQLDataType;
import java.time.OffsetDateTime;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The pieces of PostgreSQL SQL that jOOQ 3.19's DSL cannot express, as jOOQ templates in one
 * place, for the PostgreSQL stores to build their statements with: database time plus a bound
 * number of milliseconds (jOOQ has no typed date arithmetic for {@code timestamptz} columns) and
 * a table of parallel array parameters (jOOQ's {@code unnest} takes one array). Also the typed
 * bind parameter every store renders with.
 */
public final class PostgresSql {
    private PostgresSql() {}

    /** {@code q} as JDBC text with {@code ?} placeholders, rendered once and prepared many times. */
    public static String sql(Query q) {
        return q.getSQL(ParamType.INDEXED);
    }

    /** A bind parameter of {@code type}, rendered as {@code ?} (with a cast where jOOQ needs one). */
    public static <T> Field<T> param(DataType<T> type) {
        return DSL.val(null, type);
    }

    /** Database time ({@code current_timestamp}: the transaction's start) plus {@code millis} milliseconds. */
    public static Field<OffsetDateTime> nowPlusMillis(Field<Long> millis) {
        return DSL.field("({0} + {1} * interval '1 millisecond')", SQLDataType.TIMESTAMPWITHTIMEZONE,
                DSL.currentOffsetDateTime(), millis);
    }

    /**
     * {@code unnest(?, ?, ...) AS alias(columns)}: a table of parallel array parameters of {@code
     * types}, one bind parameter per array, so a statement binds a fixed number of parameters
     * whatever the number of rows. Read its columns with {@link #column}.
     */
    public static Table<?> unnest(String alias, List<String> columns, DataType<?>... types) {
        return unnest(alias, columns, null, types);
    }

    /**
     * {@link #unnest(String, List, DataType...)} with its bind parameters named {@code params}
     * (one per array, in order), for a statement that checks its binds by name.
     */
    public static Table<?> unnest(String alias, List<String> columns, @Nullable List<String> params,
            DataType<?>... types) {
        StringBuilder template = new StringBuilder("unnest(");
        Field<?>[] arrays = new Field<?>[types.length];
        for (int i = 0; i < types.length; i++) {
            template.append(i == 0 ? "" : ", ").append('{').append(i).append('}');
            arrays[i] = params == null ? param(types[i].array()) : DSL.param(params.get(i), types[i].array());
        }
        return DSL.table(template.append(')').toString(), (Object[]) arrays).as(alias, columns.toArray(String[]::new));
    }

    /** Column {@code name} of the table aliased {@code alias}: a template table knows no columns of its own. */
    public static <T> Field<T> column(String alias, String name, Class<T> type) {
        return DSL.field(DSL.name(alias, name), type);
    }
}
