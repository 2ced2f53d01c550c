package io.txbox.inbox.http;

import io.txbox.InvalidInputException;
import io.txbox.Texts;
import io.txbox.TxboxException;
import io.txbox.inbox.Claim;
import io.txbox.inbox.Inbox;
import io.txbox.inbox.LeaseLostException;
import io.txbox.inbox.http.HttpIdempotency.TransactionalRequestHandler;
import io.txbox.internal.TransactionFrame;
import io.txbox.internal.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transactional form of {@link HttpIdempotency}: the handler, the stored response and the
 * commit in one transaction on the database inbox, so that the request's writes and its stored
 * response commit together or not at all.
 */
final class TransactionalForm {
    private static final Logger log = LoggerFactory.getLogger(HttpIdempotency.class);

    private final Inbox inbox;
    /** Where the transactions come from. */
    private final DataSource ds;
    private final Responses responses;

    TransactionalForm(Inbox inbox, DataSource ds, Responses responses) {
        this.inbox = inbox;
        this.ds = ds;
        this.responses = responses;
    }

    /**
     * Handler, completion and commit in one transaction. The claim is released (5xx, failures)
     * only after the transaction's connection is back, so a request never holds two.
     */
    HttpResponseData run(TransactionalRequestHandler handler, HttpRequestData request, @Nullable Claim claim) {
        HttpResponseData answer;
        boolean release = true;
        String what = claim == null ? request.method() + " " + request.path() : "key " + Texts.quote(claim.key());
        try (Connection tx = ds.getConnection();
                TransactionFrame frame = TransactionFrame.begin(tx, this::cleanupFailed)) {
            answer = runAndComplete(handler, request, claim, tx, frame);
            release = answer.status() >= 500;
        } catch (SQLException e) {
            // No connection, or the commit failed: rolled back, or (a lost connection during
            // the commit) unknown. Releasing is safe either way: it is fenced, and a commit that
            // went through has completed the entry, so the release finds nothing to release.
            log.error("{} - transaction for {} failed; a retry with the same {} runs it again unless it committed: {}",
                    responses.consumer(), what, responses.headerName(), e.toString());
            answer = responses.unavailable("The request could not be completed; its outcome is unknown.");
        }
        if (release && claim != null) {
            responses.releaseQuietly(claim);
        }
        return answer;
    }

    /** Runs the handler on {@code tx} and ends it through {@code frame}; 5xx answers roll back. */
    private HttpResponseData runAndComplete(TransactionalRequestHandler handler, HttpRequestData request,
            @Nullable Claim claim, Connection tx, TransactionFrame frame) throws SQLException {
        HttpResponseData response;
        try {
            response = Objects.requireNonNull(handler.handle(tx, request), "the request handler returned null");
            Transactions.requireNotAborted(tx, "request " + request.method() + " " + request.path());
        } catch (Exception e) {
            frame.rollbackQuietly();
            return responses.failed(request, e);
        }
        if (response.status() >= 500) {
            // Not stored, per the draft, and its writes undone: the client may retry and run it again.
            frame.rollbackQuietly();
            return response;
        }
        if (claim != null) {
            try {
                inbox.complete(tx, claim, response.status(), responses.replayed(response.headers()), response.body());
            } catch (LeaseLostException e) {
                frame.rollbackQuietly();
                log.warn("{} - key {} was taken over by a retry while this request ran (longer than the lease); "
                        + "its writes are rolled back", responses.consumer(), Texts.quote(claim.key()));
                return Problems.problem(409, "Conflict", "The request with the " + responses.headerName() + " "
                        + Texts.quote(claim.key()) + " ran longer than allowed and was taken over by a retry; "
                        + "this run had no effect. Retry to get the response.");
            } catch (InvalidInputException e) {
                frame.rollbackQuietly();
                log.error("{} - response for key {} cannot be stored, the request is rolled back: {}",
                        responses.consumer(), Texts.quote(claim.key()), e.getMessage());
                return Problems.problem(500, "Internal Server Error", "The response could not be recorded; "
                        + "the request had no effect.");
            } catch (TxboxException e) {
                frame.rollbackQuietly();
                log.error("{} - response for key {} not stored, the request is rolled back: {}",
                        responses.consumer(), Texts.quote(claim.key()), e.toString());
                return responses.unavailable("The request could not be recorded; it had no effect.");
            }
        }
        frame.commit();
        return response;
    }

    private void cleanupFailed(String step, SQLException e) {
        log.warn("{} - {} failed: {}", responses.consumer(), step, e.toString());
    }
}
