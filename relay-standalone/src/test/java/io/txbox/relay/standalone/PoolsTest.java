package io.txbox.relay.standalone;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.TxboxException;
import java.sql.DriverManager;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PoolsTest {
    @Test
    void driverUrl_mysqlScheme_isServedByTheBundledMariaDbDriver() throws Exception {
        String url = Pools.driverUrl("jdbc:mysql://db:3306/app");
        assertThat(url).isEqualTo("jdbc:mysql://db:3306/app?permitMysqlScheme=true");
        assertThat(Pools.driverUrl("jdbc:mysql://db/app?sslMode=trust")).isEqualTo("jdbc:mysql://db/app?sslMode=trust&permitMysqlScheme=true");
        assertThat(DriverManager.getDriver(url).getClass().getName()).isEqualTo("org.mariadb.jdbc.Driver");
    }

    @Test
    void driverUrl_otherSchemes_areLeftAsTheyAre() {
        assertThat(Pools.driverUrl("jdbc:mariadb://db/app")).isEqualTo("jdbc:mariadb://db/app");
        assertThat(Pools.driverUrl("jdbc:postgresql://db/app")).isEqualTo("jdbc:postgresql://db/app");
        assertThat(Pools.driverUrl("jdbc:mysql://db/app?permitMysqlScheme")).isEqualTo("jdbc:mysql://db/app?permitMysqlScheme");
    }

    @Test
    void open_unknownHost_saysWhichHostInsteadOfOnlyThatTheAttemptFailed() {
        RelayConfig config = RelayConfig.loadForAdmin(null, Map.of("TXBOX_JDBC_URL",
                "jdbc:postgresql://orders-db.invalid:5432/orders", "TXBOX_JDBC_CONNECTION_TIMEOUT", "1s"));
        assertThatThrownBy(() -> Pools.open(config, "unknown-host", 1, null).close())
                .isInstanceOf(TxboxException.class)
                .hasMessageContaining("cannot connect to the database at jdbc:postgresql://orders-db.invalid:5432/orders")
                .hasMessageContaining("unknown host orders-db.invalid");
    }
}
