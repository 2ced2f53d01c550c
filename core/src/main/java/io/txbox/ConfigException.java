package io.txbox;

/**
 * A configuration value rejected when a builder or config file was checked. The message names
 * the property and the bad value (secrets are never echoed).
 */
public class ConfigException extends TxboxException {
    private static final long serialVersionUID = 1L;

    public ConfigException(String message) {
        super(message);
    }
}
