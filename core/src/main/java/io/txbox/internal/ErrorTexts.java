package io.txbox.internal;

/** How an error is stored in a {@code last_error} column or a Redis entry. */
public final class ErrorTexts {
    /** Longest stored error text, in characters. */
    public static final int MAX_CHARS = 2000;

    private ErrorTexts() {}

    /**
     * {@code error} as stored: class and message, no stack, no NUL (PostgreSQL text refuses it),
     * cut to {@link #MAX_CHARS} characters.
     */
    public static String describe(Throwable error) {
        String message = error.getMessage();
        String text = error.getClass().getName() + (message == null ? "" : ": " + message);
        text = text.replace('\0', ' ');
        return text.length() <= MAX_CHARS ? text : text.substring(0, MAX_CHARS - 3) + "...";
    }
}
