package io.txbox.debezium;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.stream.Stream;
import org.apache.kafka.connect.connector.Connector;

/**
 * Debezium's MariaDB connector with the Debezium version it is built with ({@code
 * debezium.mariadb.version} in this module's pom): the newest this build's repository serves, and
 * one whose task fails on the newer core the rest of this module tests with. The build copies
 * its jars to {@code target/mariadb-engine} and writes the test class path without Debezium to
 * {@code target/mariadb-engine-classpath.txt}; they are used here for a JVM of their own ({@link
 * ConnectorProcess}) or a class loader of their own ({@link #connector()}).
 */
final class MariaDbDebezium {
    static final String CONNECTOR = "io.debezium.connector.mariadb.MariaDbConnector";
    private static final Path JARS = Path.of("target", "mariadb-engine");
    private static final Path REST = Path.of("target", "mariadb-engine-classpath.txt");

    private MariaDbDebezium() {}

    /** Debezium's jars of the connector's version, with the binlog client they are built with. */
    static List<Path> jars() {
        if (!Files.isDirectory(JARS) || !Files.isRegularFile(REST)) {
            throw new IllegalStateException(JARS.toAbsolutePath() + " or " + REST + " is missing: the module's build makes"
                    + " them (mvn -pl debezium -am process-test-resources)");
        }
        try (Stream<Path> files = Files.list(JARS)) {
            List<Path> jars = files.filter(f -> f.toString().endsWith(".jar")).sorted().toList();
            if (jars.stream().noneMatch(j -> j.getFileName().toString().startsWith("debezium-connector-mariadb-"))) {
                throw new IllegalStateException(JARS.toAbsolutePath() + " holds no MariaDB connector: " + jars);
            }
            return jars;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The class path of an engine JVM: this module's classes, {@link #jars()}, then the rest without Debezium. */
    static String classPath() {
        List<String> entries = new ArrayList<>(List.of(Path.of("target", "test-classes").toAbsolutePath().toString(),
                Path.of("target", "classes").toAbsolutePath().toString()));
        jars().forEach(j -> entries.add(j.toAbsolutePath().toString()));
        try {
            entries.add(Files.readString(REST).strip());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return String.join(File.pathSeparator, entries);
    }

    /**
     * A new {@code MariaDbConnector} from a class loader of its own: Debezium's classes from {@link
     * #jars()}, everything else (Kafka Connect's API among it) from this class's loader, so the
     * connector is a {@link Connector} here and its configuration definition can be asked. Kafka's
     * {@code ConfigDef} loads class-typed values through the thread's context class loader: set it
     * to the connector's while asking.
     */
    static Connector connector() throws ReflectiveOperationException {
        return (Connector) Isolated.LOADER.loadClass(CONNECTOR).getDeclaredConstructor().newInstance();
    }

    /** One loader for the test JVM, made on first use. */
    private static final class Isolated {
        static final ClassLoader LOADER = new URLClassLoader(jars().stream().map(MariaDbDebezium::url).toArray(URL[]::new),
                new ClassLoader(MariaDbDebezium.class.getClassLoader()) {
                    @Override
                    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                        if (name.startsWith("io.debezium.")) {
                            throw new ClassNotFoundException(name);
                        }
                        return super.loadClass(name, resolve);
                    }

                    @Override
                    public URL getResource(String name) {
                        return debezium(name) ? null : super.getResource(name);
                    }

                    @Override
                    public Enumeration<URL> getResources(String name) throws IOException {
                        return debezium(name) ? Collections.emptyEnumeration() : super.getResources(name);
                    }

                    private boolean debezium(String resource) {
                        return resource.startsWith("io/debezium/") || resource.startsWith("META-INF/services/io.debezium.");
                    }
                });
    }

    private static URL url(Path jar) {
        try {
            return jar.toUri().toURL();
        } catch (MalformedURLException e) {
            throw new UncheckedIOException(e);
        }
    }
}
