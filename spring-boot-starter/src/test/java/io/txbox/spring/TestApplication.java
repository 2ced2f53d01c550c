package io.txbox.spring;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurationExcludeFilter;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.context.TypeExcludeFilter;
import org.springframework.context.annotation.ComponentScan;
import org.springframework.context.annotation.ComponentScan.Filter;
import org.springframework.context.annotation.FilterType;

/**
 * A Spring Boot service as a user writes one: JDBC, JPA and the txbox starter. It is
 * {@code @SpringBootApplication} spelled out, because it lives in the starter's own package:
 * its scan leaves out the configuration classes nested in txbox's auto-configurations, which
 * a user's application, in a package of its own, never scans.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@ComponentScan(excludeFilters = {
    @Filter(type = FilterType.CUSTOM, classes = TypeExcludeFilter.class),
    @Filter(type = FilterType.CUSTOM, classes = AutoConfigurationExcludeFilter.class),
    @Filter(type = FilterType.REGEX, pattern = "io\\.txbox\\.spring\\.Txbox\\w*AutoConfiguration\\$.*")})
public class TestApplication {}
