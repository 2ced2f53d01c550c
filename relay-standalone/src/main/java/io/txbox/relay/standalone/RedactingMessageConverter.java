package io.txbox.relay.standalone;

import ch.qos.logback.classic.pattern.MessageConverter;
import ch.qos.logback.classic.spi.ILoggingEvent;

/**
 * Logback {@code %msg} that masks secrets ({@link Redaction#scrub}), for the relay process's
 * log pattern. A driver or client library may echo a URL or password in a message; this is the
 * last line of defence, after txbox's own code has already kept them out.
 */
public final class RedactingMessageConverter extends MessageConverter {
    @Override
    public String convert(ILoggingEvent event) {
        return Redaction.scrub(super.convert(event));
    }
}
