/** Internal support shared by the txbox modules. Not API: may change in any release. */
@NullUnmarked
package io.txbox.internal;

import org.jspecify.annotations.NullUnmarked;
