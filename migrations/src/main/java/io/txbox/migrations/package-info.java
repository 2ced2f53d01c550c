/** Flyway migrations for the txbox tables. Entry point: {@link io.txbox.migrations.TxboxMigrations}. */
@NullMarked
package io.txbox.migrations;

import org.jspecify.annotations.NullMarked;
