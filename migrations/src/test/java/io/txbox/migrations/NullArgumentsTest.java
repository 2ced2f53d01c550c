package io.txbox.migrations;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.TxboxException;
import io.txbox.TxboxTables;
import io.txbox.testkit.NullArguments;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * Every public method of the core API refuses a null argument with a txbox exception naming
 * the parameter, before any I/O: the data source given beside it fails the test if touched.
 */
class NullArgumentsTest {
    static Object sample(Class<?> type) {
        if (type == DataSource.class) {
            return NullArguments.untouchable(DataSource.class);
        }
        if (type == TxboxTables.class) {
            return TxboxTables.defaults();
        }
        if (type == String.class) {
            return "x";
        }
        return null;
    }

    @Test
    void coreApi_nullArgument_isRefusedNamingTheParameter() {
        NullArguments check = NullArguments.expecting(TxboxException.class, NullArgumentsTest::sample, Set.of())
                .methods(TxboxMigrations.class, null)
                .methods(TxboxTables.class, TxboxTables.defaults())
                .constructors(TxboxTables.class)
                .methods(io.txbox.Texts.class, null);
        assertThat(check.problems()).isEmpty();
        assertThat(check.checked()).isGreaterThanOrEqualTo(8);
    }
}
