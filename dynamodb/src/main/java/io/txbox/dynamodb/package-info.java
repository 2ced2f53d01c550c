/**
 * DynamoDB for the inbox: {@link io.txbox.dynamodb.DynamoStore}, two-phase claim / complete /
 * fail / release kept in a DynamoDB table with conditional writes, for services whose data lives
 * in DynamoDB. See the module README for its guarantees and what DynamoDB limits.
 */
@NullMarked
package io.txbox.dynamodb;

import org.jspecify.annotations.NullMarked;
