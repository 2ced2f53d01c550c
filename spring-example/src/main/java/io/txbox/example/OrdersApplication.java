package io.txbox.example;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * An order service on the txbox starter: {@link OrderController} takes an order over HTTP and
 * writes it with an outbox message in one transaction; the embedded relay publishes the message
 * to Kafka; {@link PaymentListener} charges it through the inbox, once however often it arrives.
 */
@SpringBootApplication
public class OrdersApplication {
    public static void main(String[] args) {
        SpringApplication.run(OrdersApplication.class, args);
    }
}
