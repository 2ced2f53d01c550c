/** Types shared by every txbox module: the exception hierarchy and where the tables live. */
@NullMarked
package io.txbox;

import org.jspecify.annotations.NullMarked;
