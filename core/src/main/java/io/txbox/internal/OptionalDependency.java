package io.txbox.internal;

import io.txbox.ConfigException;

/**
 * The check at each entry point that needs an optional dependency (a broker client,
 * Micrometer), so a missing jar reads as the artifact to add rather than a
 * {@code NoClassDefFoundError} from deep inside the first connection.
 */
public final class OptionalDependency {
    private OptionalDependency() {}

    /**
     * Throws {@link ConfigException} naming {@code artifact} when {@code className} is not
     * visible to txbox's class loader.
     *
     * @param feature the txbox type that needs it, for the message
     */
    public static void require(String className, String artifact, String feature) {
        if (!present(className)) {
            throw new ConfigException(feature + " needs " + artifact + " on the classpath, and " + className
                    + " was not found: add the dependency " + artifact + " to the application (txbox declares it"
                    + " optional, so a service that doesn't use " + feature + " doesn't get it)");
        }
    }

    /** Whether {@code className} is visible to txbox's class loader, for features that are off without it. */
    public static boolean present(String className) {
        try {
            Class.forName(className, false, OptionalDependency.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
