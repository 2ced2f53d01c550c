package io.txbox;

/**
 * A key, header, payload or name that txbox refuses. The message names the offending value
 * (shortened when long, with control characters escaped). Nothing was written.
 */
public class InvalidInputException extends TxboxException {
    private static final long serialVersionUID = 1L;

    public InvalidInputException(String message) {
        super(message);
    }
}
