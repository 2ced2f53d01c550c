package io.txbox.outbox;

import org.jspecify.annotations.Nullable;

/**
 * Every outbox row belongs to one of {@value #COUNT} lanes, chosen from its routing key. The
 * relay publishes each lane with one owner at a time, in id order, which is what keeps
 * messages of one routing key in order across relay instances.
 */
public final class Lanes {
    /** Number of lanes. Fixed: changing it would move routing keys between lanes. */
    public static final int COUNT = 64;

    private Lanes() {}

    /** The lane of a routing key; rows without one are spread by step key. */
    public static short of(@Nullable String routingKey, String stepKey) {
        io.txbox.internal.Args.notNull(stepKey, "stepKey");
        String basis = routingKey != null ? routingKey : stepKey;
        // String.hashCode is specified, so every JVM agrees on the lane
        return (short) Math.floorMod(basis.hashCode() * 0x9E3779B1, COUNT);
    }
}
