package io.txbox.relay.standalone;

import ch.qos.logback.classic.pattern.ThrowableProxyConverter;
import ch.qos.logback.classic.spi.IThrowableProxy;

/** Logback {@code %ex} that masks secrets in exception messages and stack traces ({@link Redaction#scrub}). */
public final class RedactingThrowableConverter extends ThrowableProxyConverter {
    @Override
    protected String throwableProxyToString(IThrowableProxy tp) {
        return Redaction.scrub(super.throwableProxyToString(tp));
    }
}
