package io.txbox.spring;

import io.txbox.TxboxTables;
import io.txbox.migrations.TxboxMigrations;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.InitializingBean;

/**
 * Creates or upgrades the txbox tables when the application starts ({@code txbox.migrations=txbox}),
 * with {@link TxboxMigrations#migrate(DataSource, TxboxTables)} and its own history table. The
 * outbox and inbox beans are created after it.
 */
public final class TxboxMigrationsInitializer implements InitializingBean {
    private static final Logger log = LoggerFactory.getLogger(TxboxMigrationsInitializer.class);

    private final DataSource dataSource;
    private final TxboxTables tables;

    public TxboxMigrationsInitializer(DataSource dataSource, TxboxTables tables) {
        this.dataSource = dataSource;
        this.tables = tables;
    }

    @Override
    public void afterPropertiesSet() {
        TxboxMigrations.MigrationResult result = TxboxMigrations.migrate(dataSource, tables);
        log.info("[schema {}] txbox tables at version {} ({} migrations applied, history in {})",
                result.schema(), result.schemaVersion(), result.migrationsExecuted(), tables.historyTable());
    }
}
