/** Micrometer meters for the inbox; the only package of txbox-inbox that needs Micrometer. */
@NullMarked
package io.txbox.inbox.micrometer;

import org.jspecify.annotations.NullMarked;
