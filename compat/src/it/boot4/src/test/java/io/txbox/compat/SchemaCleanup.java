package io.txbox.compat;

import io.txbox.TxboxTables;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/** Drops the application's schema when a test's application context closes, so no run leaves tables behind. */
@Component
class SchemaCleanup implements DisposableBean {
    private final JdbcTemplate jdbc;
    private final TxboxTables tables;

    SchemaCleanup(JdbcTemplate jdbc, TxboxTables tables) {
        this.jdbc = jdbc;
        this.tables = tables;
    }

    @Override
    public void destroy() {
        jdbc.execute("drop schema if exists " + tables.schema() + " cascade");
    }
}
