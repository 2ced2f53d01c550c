package io.txbox.bench;

/** Which broker a relay scenario publishes to. */
enum Broker {
    KAFKA("kafka"),
    RABBITMQ("rabbitmq");

    final String id;

    Broker(String id) {
        this.id = id;
    }

    static Broker parse(String s) {
        for (Broker b : values()) {
            if (b.id.equalsIgnoreCase(s)) {
                return b;
            }
        }
        throw new Options.UsageException("--broker must be kafka or rabbitmq, but was '" + s + "'");
    }
}
