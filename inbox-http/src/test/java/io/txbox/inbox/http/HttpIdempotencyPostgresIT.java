package io.txbox.inbox.http;

import io.txbox.testkit.TestDatabase;
import io.txbox.testkit.TestPostgres;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link HttpIdempotencyContract} on PostgreSQL. */
class HttpIdempotencyPostgresIT extends HttpIdempotencyContract {
    @RegisterExtension
    static final TestPostgres DB = TestPostgres.perClass();

    @Override
    TestDatabase database() {
        return DB;
    }
}
