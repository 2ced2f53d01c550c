package io.txbox.spring;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A Spring Boot service as a user writes one: JDBC, JPA and the txbox starter. */
@SpringBootApplication
public class TestApplication {}
