package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The statements as rendered when a relay is built, read from the store's fields (it has no accessor for them). */
class PostgresRelayStoreTest {
    static final Map<String, String> SQL = new LinkedHashMap<>();

    static {
        PostgresRelayStore store = new PostgresRelayStore(new TxboxTables("orders", "tx_"));
        SQL.putAll(rendered(store));
        SQL.putAll(rendered(store.lanes()));
    }

    /** A store's instance {@code String} fields by name: its rendered statements. */
    static Map<String, String> rendered(Object store) {
        Map<String, String> sql = new LinkedHashMap<>();
        for (Field f : store.getClass().getDeclaredFields()) {
            if (f.getType() == String.class && !Modifier.isStatic(f.getModifiers())) {
                f.setAccessible(true);
                try {
                    sql.put(f.getName(), (String) f.get(store));
                } catch (IllegalAccessException e) {
                    throw new AssertionError(e);
                }
            }
        }
        return sql;
    }

    @Test
    void statements_renderedWithSchemaAndPrefix_neverTheGeneratedNames() {
        assertThat(SQL).hasSizeGreaterThanOrEqualTo(18);
        SQL.forEach((name, sql) -> {
            if (!name.equals("missingTables")) { // it reads the catalog for the names it is given
                assertThat(sql).as(name).contains("\"orders\".\"tx_").doesNotContain("txbox_").doesNotContain("\"txbox\"");
            }
        });
    }

    @Test
    void claim_readsDueRowsOfTheLanesInIdOrder_withoutRowLocks() {
        assertThat(SQL.get("claim")).contains("\"orders\".\"tx_outbox\"").contains("order by")
                .endsWith("fetch next ? rows only").doesNotContain("for update");
    }

    @Test
    void lockLanes_checksOwnerAndFence_andLocksOnlyTheLaneRows() {
        assertThat(SQL.get("lockLanes")).contains("\"l\".\"fence\" = \"mine\".\"fence\"").contains("\"l\".\"owner\" = ?")
                .endsWith("for no key update of \"l\"");
    }
}
