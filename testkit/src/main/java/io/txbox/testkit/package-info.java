/**
 * JUnit 5 support for tests that run against a real PostgreSQL, a real MariaDB, a real Kafka
 * broker and a real RabbitMQ.
 *
 * <ul>
 *   <li>{@link io.txbox.testkit.TestPostgres}: a fresh schema per test class, dropped afterwards.
 *   <li>{@link io.txbox.testkit.TestMariaDb}: a fresh MariaDB database per test class, dropped
 *       afterwards.
 *   <li>{@link io.txbox.testkit.TestDatabases}: both of them for one class, handed to each
 *       invocation of a {@code @ParameterizedTest} as a {@link io.txbox.testkit.TestDatabase}
 *       through {@code @ArgumentsSource(TestDatabases.Each.class)}, so one suite runs on both.
 *   <li>{@link io.txbox.testkit.KafkaBroker}: a single-node KRaft broker in a child JVM, shared by
 *       every test JVM of a build ({@link io.txbox.testkit.KafkaBroker#shared()}) or private to a
 *       fault test ({@link io.txbox.testkit.KafkaBroker#startPrivate()}); {@link
 *       io.txbox.testkit.TestKafka} wraps the shared one as an extension.
 *   <li>{@link io.txbox.testkit.TestRabbit}: per-class names on a RabbitMQ node, deleted
 *       afterwards, plus stop/start of the node's application and closing named connections
 *       from the broker, for fault tests.
 *   <li>{@link io.txbox.testkit.TestRedis}: a key prefix per test class on a Redis server, its keys
 *       deleted afterwards.
 *   <li>{@link io.txbox.testkit.DeleteGate}: holds every DELETE on a table, so a test can stop a
 *       transaction right before it deletes and terminate or kill it there.
 *   <li>{@link io.txbox.testkit.TestJvmWatchdog}: opt-in hard time limit for a test JVM, with a
 *       thread dump before it halts.
 * </ul>
 *
 * <p>Every address can be overridden through the environment: {@code TXBOX_TEST_JDBC_URL},
 * {@code TXBOX_TEST_JDBC_USER}, {@code TXBOX_TEST_JDBC_PASSWORD}, {@code TXBOX_TEST_MARIADB_URL} (with {@code
 * TXBOX_TEST_MARIADB_USER}, {@code TXBOX_TEST_MARIADB_PASSWORD}), {@code TXBOX_TEST_KAFKA},
 * {@code TXBOX_TEST_AMQP_URI} and {@code TXBOX_TEST_REDIS_URL}. A service that cannot be reached fails the test class quickly with
 * a {@link io.txbox.testkit.TestkitException} that names the service, the address and how to start
 * it.
 */
@NullMarked
package io.txbox.testkit;

import org.jspecify.annotations.NullMarked;
