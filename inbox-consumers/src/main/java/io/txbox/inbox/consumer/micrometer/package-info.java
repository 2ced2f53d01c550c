/** Micrometer meters for the consumers; the only package of txbox-inbox-consumers that needs Micrometer. */
@NullMarked
package io.txbox.inbox.consumer.micrometer;

import org.jspecify.annotations.NullMarked;
