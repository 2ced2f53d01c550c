/**
 * HTTP {@code Idempotency-Key} support on top of the inbox, following the IETF
 * Idempotency-Key draft. Framework-neutral: {@link io.txbox.inbox.http.HttpIdempotency} works
 * on {@link io.txbox.inbox.http.HttpRequestData} and {@link io.txbox.inbox.http.HttpResponseData},
 * with an adapter for the JDK's {@code com.sun.net.httpserver}. A servlet filter calls
 * {@link io.txbox.inbox.http.HttpIdempotency#handle} the same way (see its Javadoc).
 *
 * <p>No argument may be null unless its Javadoc says what null means: a null argument is
 * refused before any I/O with {@link io.txbox.InvalidInputException} (a builder option with
 * {@link io.txbox.ConfigException}) whose message names the parameter.
 */
@NullMarked
package io.txbox.inbox.http;

import org.jspecify.annotations.NullMarked;
