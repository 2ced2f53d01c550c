package io.txbox.spring;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A business row written through JPA. */
@Entity
@Table(name = "shipment")
public class Shipment {
    @Id
    private String orderId;

    protected Shipment() {}

    public Shipment(String orderId) {
        this.orderId = orderId;
    }

    public String getOrderId() {
        return orderId;
    }
}
