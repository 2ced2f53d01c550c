package io.txbox.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.ConfigException;
import org.junit.jupiter.api.Test;

/** Which database a connection reaches, and a clear refusal of the ones txbox does not run on. */
class DialectTest {
    @Test
    void of_supportedServers_areRecognized() {
        assertThat(Dialect.of("PostgreSQL", "16.4")).isEqualTo(Dialect.POSTGRESQL);
        assertThat(Dialect.of("MariaDB", "10.11.19-MariaDB-0+deb12u1")).isEqualTo(Dialect.MARIADB);
        assertThat(Dialect.of("MariaDB", "10.6.0-MariaDB")).isEqualTo(Dialect.MARIADB);
        assertThat(Dialect.of("MariaDB", "11.4.2-MariaDB")).isEqualTo(Dialect.MARIADB);
        assertThat(Dialect.of("MySQL", "8.0.36")).isEqualTo(Dialect.MYSQL);
        assertThat(Dialect.of("MySQL", "9.1.0")).isEqualTo(Dialect.MYSQL);
    }

    @Test
    void capabilities_postgresqlOnly_chainsCommitsAndReceivesAheadOfResults() {
        assertThat(Dialect.POSTGRESQL.chainsCommits()).isTrue();
        assertThat(Dialect.POSTGRESQL.receivesAheadOfResults()).isTrue();
        for (Dialect mysqlFamily : new Dialect[] {Dialect.MARIADB, Dialect.MYSQL}) {
            assertThat(mysqlFamily.chainsCommits()).as(mysqlFamily.product()).isFalse();
            assertThat(mysqlFamily.receivesAheadOfResults()).as(mysqlFamily.product()).isFalse();
        }
    }

    @Test
    void of_mysqlDriverOnMariadb_isMariadbByItsVersion() {
        assertThat(Dialect.of("MySQL", "10.11.19-MariaDB-log")).isEqualTo(Dialect.MARIADB);
    }

    @Test
    void of_mysql57_namesTheVersionFoundAndNeeded() {
        assertThatThrownBy(() -> Dialect.of("MySQL", "5.7.44"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("MySQL 8.0 or later")
                .hasMessageContaining("MySQL 5.7.44");
    }

    @Test
    void of_mariadbBefore106_namesTheVersionFoundAndNeeded() {
        assertThatThrownBy(() -> Dialect.of("MariaDB", "10.5.23-MariaDB"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("MariaDB 10.6 or later")
                .hasMessageContaining("10.5.23-MariaDB");
    }

    @Test
    void of_otherDatabase_namesItAndWhatIsSupported() {
        assertThatThrownBy(() -> Dialect.of("H2", "2.2.224"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("H2 2.2.224")
                .hasMessageContaining("PostgreSQL, MariaDB 10.6+ and MySQL 8.0+");
        assertThatThrownBy(() -> Dialect.of(null, null)).isInstanceOf(ConfigException.class);
    }

    @Test
    void of_unreadableVersion_isRefusedNamingIt() {
        assertThatThrownBy(() -> Dialect.of("MariaDB", "garbage"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("\"garbage\"");
    }
}
