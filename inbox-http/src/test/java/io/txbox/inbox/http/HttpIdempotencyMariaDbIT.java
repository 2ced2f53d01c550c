package io.txbox.inbox.http;

import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestMariaDb;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link HttpIdempotencyContract} on MariaDB. */
class HttpIdempotencyMariaDbIT extends HttpIdempotencyContract {
    @RegisterExtension
    static final TestMariaDb DB = TestMariaDb.perClass();

    @Override
    TestDatabase database() {
        return DB;
    }
}
