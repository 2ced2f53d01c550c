/** Internal support shared by the inbox's store modules (Redis, DynamoDB). Not API: may change in any release. */
@NullMarked
package io.txbox.inbox.internal;

import org.jspecify.annotations.NullMarked;
