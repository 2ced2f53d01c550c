package io.txbox.release;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Checks the repository the release build staged, before anything is uploaded from it:
 * exactly the published artifacts, each with its jar, sources and Javadoc jars (a pom-packaged
 * artifact: its POM), an MD5 and SHA-1 checksum beside every file, and a POM that carries what
 * Maven Central requires (name, description, url, licenses, scm, developers), directly or
 * through a parent staged beside it.
 *
 * <p>{@code check <staging dir> <groupId> <version> <artifactId,artifactId,...>} checks the staged
 * repository; {@code origin <local repository> <repository id> <groupId>} checks that every
 * artifact of the group in a local repository was resolved from the repository with that id.
 * Either throws {@link IllegalStateException} listing every problem.
 */
public final class StagedRepository {
    private StagedRepository() {}

    public static void main(String[] args) throws Exception {
        List<String> problems = switch (args.length > 0 ? args[0] : "") {
            case "check" -> check(Path.of(args[1]), args[2], args[3], Set.of(args[4].split(",")));
            case "origin" -> origin(Path.of(args[1]), args[2], args[3]);
            default -> throw new IllegalArgumentException("usage: check <staging dir> <groupId> <version> <artifactIds>"
                    + " | origin <local repository> <repository id> <groupId>; got " + List.of(args));
        };
        if (!problems.isEmpty()) {
            throw new IllegalStateException(problems.size() + " problem(s):\n  " + String.join("\n  ", problems));
        }
    }

    /** The problems of the staged repository {@code root}; empty if it may be published. */
    static List<String> check(Path root, String groupId, String version, Set<String> artifactIds) throws IOException {
        List<String> problems = new ArrayList<>();
        Path group = root.resolve(groupId.replace('.', '/'));
        Set<String> staged = new TreeSet<>();
        if (Files.isDirectory(group)) {
            try (Stream<Path> dirs = Files.list(group)) {
                dirs.filter(Files::isDirectory).forEach(d -> staged.add(d.getFileName().toString()));
            }
        }
        for (String a : new TreeSet<>(staged)) {
            if (!artifactIds.contains(a)) {
                problems.add(groupId + ":" + a + " is staged but is not a published artifact");
            }
        }
        for (String a : new TreeSet<>(artifactIds)) {
            Path dir = group.resolve(a).resolve(version);
            Path pom = dir.resolve(a + "-" + version + ".pom");
            if (!Files.isRegularFile(pom)) {
                problems.add(groupId + ":" + a + ":" + version + " is not staged (no " + root.relativize(pom) + ")");
                continue;
            }
            Document doc = parse(pom, problems);
            if (doc == null) {
                continue;
            }
            List<String> files = new ArrayList<>(List.of(pom.getFileName().toString()));
            String packaging = text(doc.getDocumentElement(), "packaging");
            if (packaging == null || packaging.equals("jar")) {
                for (String suffix : List.of(".jar", "-sources.jar", "-javadoc.jar")) {
                    files.add(a + "-" + version + suffix);
                }
            }
            for (String f : files) {
                checkFile(root, dir.resolve(f), problems);
            }
            checkPom(root, groupId, version, a, doc, problems);
        }
        return problems;
    }

    private static void checkFile(Path root, Path file, List<String> problems) throws IOException {
        if (!Files.isRegularFile(file)) {
            problems.add(root.relativize(file) + " is missing");
            return;
        }
        for (String algorithm : List.of("MD5", "SHA-1")) {
            Path sum = file.resolveSibling(file.getFileName() + "." + algorithm.replace("-", "").toLowerCase());
            String want = digest(file, algorithm);
            if (!Files.isRegularFile(sum)) {
                problems.add(root.relativize(sum) + " is missing");
            } else if (!Files.readString(sum).trim().split("\\s+")[0].equalsIgnoreCase(want)) {
                problems.add(root.relativize(sum) + " does not match the file (want " + want + ")");
            }
        }
    }

    /** Central's required elements, each found in the POM or in a parent staged in {@code root}. */
    private static void checkPom(Path root, String groupId, String version, String artifactId, Document doc,
            List<String> problems) {
        List<Element> chain = new ArrayList<>();
        Element project = doc.getDocumentElement();
        while (project != null) {
            chain.add(project);
            Element parent = child(project, "parent");
            if (parent == null) {
                break;
            }
            String pg = text(parent, "groupId");
            String pa = text(parent, "artifactId");
            String pv = text(parent, "version");
            Path parentPom = root.resolve(pg.replace('.', '/')).resolve(pa).resolve(pv).resolve(pa + "-" + pv + ".pom");
            if (!Files.isRegularFile(parentPom)) {
                problems.add(artifactId + ": its parent " + pg + ":" + pa + ":" + pv + " is not staged");
                break;
            }
            Document parentDoc = parse(parentPom, problems);
            project = parentDoc == null ? null : parentDoc.getDocumentElement();
        }
        String where = groupId + ":" + artifactId + ":" + version + " POM";
        // name and description are not inherited in a way Central accepts: each POM names itself
        for (String own : List.of("name", "description")) {
            if (blank(text(chain.get(0), own))) {
                problems.add(where + " has no <" + own + ">");
            }
        }
        for (String[] required : new String[][] {
                {"url"}, {"licenses", "license", "name"}, {"licenses", "license", "url"},
                {"scm", "url"}, {"scm", "connection"}, {"developers", "developer", "name"}}) {
            if (chain.stream().noneMatch(p -> !blank(path(p, required)))) {
                problems.add(where + " has no <" + String.join("><", required) + "> (nor has a parent)");
            }
        }
    }

    /** The problems of {@code groupId}'s artifacts in {@code localRepository} not resolved from {@code repositoryId}. */
    static List<String> origin(Path localRepository, String repositoryId, String groupId) throws IOException {
        List<String> problems = new ArrayList<>();
        Path group = localRepository.resolve(groupId.replace('.', '/'));
        List<Path> records;
        try (Stream<Path> files = Files.isDirectory(group) ? Files.walk(group) : Stream.empty()) {
            records = files.filter(f -> f.getFileName().toString().equals("_remote.repositories")).sorted().toList();
        }
        if (records.isEmpty()) {
            problems.add("no " + groupId + " artifact was resolved into " + localRepository);
        }
        for (Path record : records) {
            for (String line : Files.readAllLines(record)) {
                int gt = line.indexOf('>');
                if (line.startsWith("#") || gt < 0) {
                    continue;
                }
                String from = line.substring(gt + 1, line.indexOf('=', gt) < 0 ? line.length() : line.indexOf('=', gt));
                if (!from.equals(repositoryId)) {
                    problems.add(localRepository.relativize(record.resolveSibling(line.substring(0, gt)))
                            + " came from " + (from.isEmpty() ? "a local install" : "repository " + from)
                            + ", not from " + repositoryId);
                }
            }
        }
        return problems;
    }

    private static Document parse(Path pom, List<String> problems) {
        try (InputStream in = Files.newInputStream(pom)) {
            DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            return factory.newDocumentBuilder().parse(in);
        } catch (Exception e) {
            problems.add(pom + " is not a readable POM: " + e.getMessage());
            return null;
        }
    }

    private static Element child(Element parent, String name) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                return e;
            }
        }
        return null;
    }

    private static String text(Element parent, String name) {
        Element e = child(parent, name);
        return e == null ? null : e.getTextContent().trim();
    }

    private static String path(Element from, String[] names) {
        Element e = from;
        for (int i = 0; i < names.length - 1 && e != null; i++) {
            e = child(e, names[i]);
        }
        return e == null ? null : text(e, names[names.length - 1]);
    }

    private static boolean blank(String s) {
        return s == null || s.isBlank();
    }

    private static String digest(Path file, String algorithm) throws IOException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance(algorithm).digest(Files.readAllBytes(file)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
