/**
 * The {@code txbox-relay} command line (picocli): {@code run}, {@code migrate}, {@code status},
 * {@code dead list|retry|purge} and {@code inbox purge}, each with {@code --config}, {@code
 * --help} and, for reports, {@code --json}. Entry point: {@link io.txbox.relay.cli.TxboxCli}.
 */
@NullMarked
package io.txbox.relay.cli;

import org.jspecify.annotations.NullMarked;
