package io.txbox.relay.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** A command that only groups subcommands: run without one, it is a usage error naming them. */
abstract class CommandGroup implements Runnable {
    @Spec
    CommandSpec spec;

    /** The subcommands as the error lists them, such as {@code "list, retry or skip"}. */
    abstract String subcommands();

    @Override
    public final void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: " + subcommands());
    }
}
