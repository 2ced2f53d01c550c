package io.txbox.release;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StagedRepositoryTest {
    static final String VERSION = "1.2.3";
    static final String PARENT = """
            <project><groupId>io.txbox</groupId><artifactId>txbox-parent</artifactId><version>1.2.3</version>
              <packaging>pom</packaging><name>txbox</name><description>the parent</description>
              <url>https://example.org/txbox</url>
              <licenses><license><name>Apache-2.0</name><url>https://www.apache.org/licenses/LICENSE-2.0.txt</url></license></licenses>
              <developers><developer><name>The txbox developers</name></developer></developers>
              %s
            </project>""";
    static final String SCM = "<scm><connection>scm:git:https://example.org/txbox.git</connection><url>https://example.org/txbox</url></scm>";
    static final String CHILD = """
            <project><parent><groupId>io.txbox</groupId><artifactId>txbox-parent</artifactId><version>1.2.3</version></parent>
              <artifactId>txbox-core</artifactId><name>txbox core</name><description>the core</description></project>""";

    @TempDir Path root;

    @Test
    void check_completeStaging_findsNoProblem() throws Exception {
        stage(PARENT.formatted(SCM));
        assertThat(check()).isEmpty();
    }

    @Test
    void check_pomWithoutScm_namesTheMissingElement() throws Exception {
        stage(PARENT.formatted(""));
        assertThat(check()).contains(
                "io.txbox:txbox-core:1.2.3 POM has no <scm><url> (nor has a parent)",
                "io.txbox:txbox-core:1.2.3 POM has no <scm><connection> (nor has a parent)",
                "io.txbox:txbox-parent:1.2.3 POM has no <scm><url> (nor has a parent)");
    }

    @Test
    void check_missingJavadocAndChecksum_namesEachFile() throws Exception {
        stage(PARENT.formatted(SCM));
        Path dir = root.resolve("io/txbox/txbox-core/1.2.3");
        Files.delete(dir.resolve("txbox-core-1.2.3-javadoc.jar"));
        Files.delete(dir.resolve("txbox-core-1.2.3.jar.sha1"));
        Files.writeString(dir.resolve("txbox-core-1.2.3.pom.md5"), "0123");
        assertThat(check()).containsExactlyInAnyOrder(
                "io/txbox/txbox-core/1.2.3/txbox-core-1.2.3-javadoc.jar is missing",
                "io/txbox/txbox-core/1.2.3/txbox-core-1.2.3.jar.sha1 is missing",
                "io/txbox/txbox-core/1.2.3/txbox-core-1.2.3.pom.md5 does not match the file (want "
                        + hex("MD5", dir.resolve("txbox-core-1.2.3.pom")) + ")");
    }

    @Test
    void check_unpublishedArtifactStaged_failsAndNamesIt() throws Exception {
        stage(PARENT.formatted(SCM));
        Files.createDirectories(root.resolve("io/txbox/txbox-bench/1.2.3"));
        assertThat(check()).containsExactly("io.txbox:txbox-bench is staged but is not a published artifact");
    }

    @Test
    void origin_artifactFromAnotherRepository_isNamed(@TempDir Path local) throws Exception {
        Path core = Files.createDirectories(local.resolve("io/txbox/txbox-core/1.2.3"));
        Files.writeString(core.resolve("_remote.repositories"), "#x\ntxbox-core-1.2.3.jar>txbox-staging=\n");
        Path bom = Files.createDirectories(local.resolve("io/txbox/txbox-bom/1.2.3"));
        Files.writeString(bom.resolve("_remote.repositories"), "txbox-bom-1.2.3.pom>=\ntxbox-bom-1.2.3.jar>central=\n");
        assertThat(StagedRepository.origin(local, "txbox-staging", "io.txbox")).containsExactly(
                "io/txbox/txbox-bom/1.2.3/txbox-bom-1.2.3.pom came from a local install, not from txbox-staging",
                "io/txbox/txbox-bom/1.2.3/txbox-bom-1.2.3.jar came from repository central, not from txbox-staging");
    }

    private List<String> check() throws IOException {
        return StagedRepository.check(root, "io.txbox", VERSION, Set.of("txbox-parent", "txbox-core"));
    }

    private void stage(String parentPom) throws Exception {
        write("txbox-parent", "txbox-parent-1.2.3.pom", parentPom);
        write("txbox-core", "txbox-core-1.2.3.pom", CHILD);
        for (String suffix : List.of(".jar", "-sources.jar", "-javadoc.jar")) {
            write("txbox-core", "txbox-core-1.2.3" + suffix, "jar" + suffix);
        }
    }

    private void write(String artifactId, String name, String content) throws Exception {
        Path file = Files.createDirectories(root.resolve("io/txbox").resolve(artifactId).resolve(VERSION)).resolve(name);
        Files.writeString(file, content);
        Files.writeString(file.resolveSibling(name + ".md5"), hex("MD5", file));
        Files.writeString(file.resolveSibling(name + ".sha1"), hex("SHA-1", file) + "  " + name);
    }

    private static String hex(String algorithm, Path file) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance(algorithm).digest(Files.readAllBytes(file)));
    }
}
