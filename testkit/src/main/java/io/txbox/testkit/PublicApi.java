package io.txbox.testkit;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The public surface of a module, read from its compiled classes, checked against an allowlist
 * the module keeps beside its {@code pom.xml}, so that a type becomes API only on purpose.
 *
 * <pre>{@code
 * @Test
 * void publicTypes_areTheListedOnes() {
 *     PublicApi api = PublicApi.of(Path.of("target/classes"));
 *     assertThat(api.problems(Path.of("public-api.txt"))).isEmpty();
 * }
 * }</pre>
 *
 * <p>A type is public API when it is public (a nested type: public, and every type around it
 * too) and its package has no segment named {@code internal}. Internal and generated packages
 * ({@code io.txbox.internal.*}, {@code ...relay.internal}) are public only for the modules'
 * own use, so they are left out. Reads class files only: nothing is loaded or initialised.
 *
 * <p>The allowlist has one fully qualified name a line (nested types as {@code Outer.Inner});
 * blank lines and lines starting with {@code #} are ignored.
 */
public final class PublicApi {
    private static final int ACC_PUBLIC = 0x0001;

    private final TreeSet<String> types;
    private final TreeSet<String> topLevel;

    private PublicApi(TreeSet<String> types, TreeSet<String> topLevel) {
        this.types = types;
        this.topLevel = topLevel;
    }

    /**
     * Reads the public types under {@code classesDir} (a compiled output folder, such as
     * {@code target/classes}).
     *
     * @throws TestkitException if the folder does not exist or a class file cannot be read
     */
    public static PublicApi of(Path classesDir) {
        if (classesDir == null || !Files.isDirectory(classesDir)) {
            throw new TestkitException("classes folder " + classesDir + " does not exist: compile the module first"
                    + " (the check runs in its test phase, with the module folder as working directory)");
        }
        TreeSet<String> out = new TreeSet<>();
        TreeSet<String> top = new TreeSet<>();
        try (Stream<Path> files = Files.walk(classesDir)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".class"))::iterator) {
                String binary = classesDir.relativize(f).toString().replace('\\', '/');
                binary = binary.substring(0, binary.length() - ".class".length()).replace('/', '.');
                if (binary.endsWith("package-info") || binary.endsWith("module-info") || isInternal(binary)
                        || isLocalOrAnonymous(binary)) {
                    continue;
                }
                if (isPublicAllTheWayOut(classesDir, binary)) {
                    out.add(binary.replace('$', '.'));
                    if (binary.indexOf('$') < 0) {
                        top.add(binary);
                    }
                }
            }
        } catch (IOException e) {
            throw new TestkitException("cannot read the classes under " + classesDir + ": " + e.getMessage(), e);
        }
        return new PublicApi(out, top);
    }

    /** Every public type outside internal packages, nested ones as {@code Outer.Inner}, sorted. */
    public List<String> types() {
        return List.copyOf(types);
    }

    /**
     * The public top-level types outside internal packages: the entry points and values a user
     * meets (nested types such as builders and results come with them).
     */
    public List<String> topLevelTypes() {
        return List.copyOf(topLevel);
    }

    /**
     * What differs from the allowlist at {@code allowlist}: each public type it does not list
     * (make it package-private, move it to an internal package, or list it if it is meant for
     * users) and each listed type that is no longer public. Empty when they agree.
     *
     * @throws TestkitException if the allowlist cannot be read
     */
    public List<String> problems(Path allowlist) {
        TreeSet<String> listed = new TreeSet<>();
        try {
            for (String line : Files.readAllLines(allowlist)) {
                String t = line.strip();
                if (!t.isEmpty() && !t.startsWith("#")) {
                    listed.add(t);
                }
            }
        } catch (IOException e) {
            throw new TestkitException("cannot read the public API list " + allowlist.toAbsolutePath() + ": " + e.getMessage()
                    + "; create it with one public type a line", e);
        }
        List<String> problems = new ArrayList<>();
        for (String t : types) {
            if (!listed.contains(t)) {
                problems.add(t + " is public but not in " + allowlist + ": make it package-private or internal,"
                        + " or add it to the list if users are meant to use it");
            }
        }
        for (String t : listed) {
            if (!types.contains(t)) {
                problems.add(t + " is listed in " + allowlist + " but is not a public type any more: remove the line");
            }
        }
        return problems;
    }

    private static boolean isInternal(String binary) {
        String pkg = binary.substring(0, Math.max(0, binary.lastIndexOf('.')));
        return ("." + pkg + ".").contains(".internal.");
    }

    /** {@code Outer$1}, {@code Outer$1Local}: not types a caller can name. */
    private static boolean isLocalOrAnonymous(String binary) {
        String simple = binary.substring(binary.lastIndexOf('.') + 1);
        for (String part : simple.split("\\$")) {
            if (!part.isEmpty() && Character.isDigit(part.charAt(0))) {
                return true;
            }
        }
        return false;
    }

    private static boolean isPublicAllTheWayOut(Path classesDir, String binary) throws IOException {
        String name = binary;
        while (true) {
            Path file = classesDir.resolve(name.replace('.', '/') + ".class");
            if (!Files.exists(file) || (accessFlags(file) & ACC_PUBLIC) == 0) {
                return false;
            }
            int dollar = name.lastIndexOf('$');
            if (dollar < 0) {
                return true;
            }
            name = name.substring(0, dollar);
        }
    }

    /** The class file's access_flags, after its constant pool (JVMS 4.1). */
    private static int accessFlags(Path classFile) throws IOException {
        try (InputStream in = Files.newInputStream(classFile); DataInputStream d = new DataInputStream(in)) {
            if (d.readInt() != 0xCAFEBABE) {
                throw new IOException(classFile + " is not a class file");
            }
            d.readUnsignedShort();
            d.readUnsignedShort();
            int count = d.readUnsignedShort();
            for (int i = 1; i < count; i++) {
                int tag = d.readUnsignedByte();
                switch (tag) {
                    case 1 -> d.skipNBytes(d.readUnsignedShort());
                    case 3, 4, 9, 10, 11, 12, 17, 18 -> d.skipNBytes(4);
                    case 5, 6 -> {
                        d.skipNBytes(8);
                        i++;
                    }
                    case 7, 8, 16, 19, 20 -> d.skipNBytes(2);
                    case 15 -> d.skipNBytes(3);
                    default -> throw new IOException(classFile + ": unknown constant pool tag " + tag);
                }
            }
            return d.readUnsignedShort();
        }
    }
}
