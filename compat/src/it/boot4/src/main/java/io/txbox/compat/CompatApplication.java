package io.txbox.compat;

import io.txbox.TxboxTables;
import io.txbox.inbox.Inbox;
import io.txbox.migrations.TxboxMigrations;
import io.txbox.outbox.Outbox;
import javax.sql.DataSource;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/** A service that writes an outbox row and records an inbox entry in its own transactions. */
@SpringBootApplication
public class CompatApplication {
    /** A schema of its own per run, so runs never meet. */
    @Bean
    TxboxTables txboxTables() {
        return TxboxTables.inSchema("compat_" + Long.toHexString(System.nanoTime()));
    }

    @Bean
    Outbox outbox(TxboxTables tables, DataSource dataSource) {
        TxboxMigrations.migrate(dataSource, tables);
        return Outbox.builder().tables(tables).build();
    }

    @Bean
    Inbox inbox(TxboxTables tables, Outbox outbox) {
        return Inbox.builder("compat").tables(outbox.tables()).build();
    }

    public static void main(String[] args) {
        SpringApplication.run(CompatApplication.class, args);
    }
}
