package io.txbox.relay.cli;

import picocli.CommandLine.IVersionProvider;

/** {@code --version}: the jar's Implementation-Version. */
final class Version implements IVersionProvider {
    @Override
    public String[] getVersion() {
        String v = TxboxCli.class.getPackage().getImplementationVersion();
        return new String[] {"txbox-relay " + (v == null ? "(development build)" : v)};
    }
}
