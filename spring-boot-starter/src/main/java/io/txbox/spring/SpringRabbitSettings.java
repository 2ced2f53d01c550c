package io.txbox.spring;

import com.rabbitmq.client.ConnectionFactory;

/**
 * The RabbitMQ client factory under the application's Spring AMQP connection factory, which
 * Spring Boot configures from {@code spring.rabbitmq.*} (host, port, credentials, virtual host,
 * SSL). The relay opens a connection of its own from a copy of it.
 *
 * @param factory the client factory; never modified
 */
record SpringRabbitSettings(ConnectionFactory factory) {}
