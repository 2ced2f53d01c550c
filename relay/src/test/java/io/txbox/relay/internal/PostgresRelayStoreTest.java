package io.txbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxTables;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
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

    /**
     * A store's instance {@code String} fields by name, and its claim statements as
     * {@code claims.first} and so on: its rendered statements.
     */
    static Map<String, String> rendered(Object store) {
        Map<String, String> sql = new LinkedHashMap<>();
        for (Field f : store.getClass().getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers())) {
                continue;
            }
            f.setAccessible(true);
            try {
                if (f.getType() == String.class) {
                    sql.put(f.getName(), (String) f.get(store));
                } else if (f.getType() == RelayStore.ClaimStatements.class) {
                    RelayStore.ClaimStatements claims = (RelayStore.ClaimStatements) f.get(store);
                    for (RecordComponent c : RelayStore.ClaimStatements.class.getRecordComponents()) {
                        sql.put(f.getName() + "." + c.getName(), (String) c.getAccessor().invoke(claims));
                    }
                }
            } catch (ReflectiveOperationException e) {
                throw new AssertionError(e);
            }
        }
        return sql;
    }

    @Test
    void statements_renderedWithSchemaAndPrefix_neverTheGeneratedNames() {
        assertThat(SQL).hasSizeGreaterThanOrEqualTo(24).containsKeys("claims.first", "claims.chainedSkipping");
        SQL.forEach((name, sql) -> {
            if (!name.equals("missingTables")) { // it reads the catalog for the names it is given
                assertThat(sql).as(name).contains("\"orders\".\"tx_").doesNotContain("txbox_").doesNotContain("\"txbox\"");
            }
        });
    }

    @Test
    void claim_readsDueRowsOfTheLanesInIdOrder_withoutRowLocks() {
        assertThat(SQL.get("claims.first")).contains("\"orders\".\"tx_outbox\"").contains("order by")
                .endsWith("fetch next ? rows only").doesNotContain("for update");
    }

    @Test
    void lockLanes_checksOwnerAndFence_andLocksOnlyTheLaneRows() {
        assertThat(SQL.get("lockLanes")).contains("\"l\".\"fence\" = \"mine\".\"fence\"").contains("\"l\".\"owner\" = ?")
                .endsWith("for no key update of \"l\"");
    }
}
