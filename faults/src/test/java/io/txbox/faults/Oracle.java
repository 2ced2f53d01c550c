package io.txbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The promise, checked: every emitted step key was delivered at least once, and every one has
 * exactly one business effect, however often it was delivered.
 */
final class Oracle {
    private static final Logger log = LoggerFactory.getLogger(Oracle.class);

    private Oracle() {}

    /**
     * @param emitted the step keys written to the outbox (or accepted requests)
     * @param delivered every delivery seen on the broker, duplicates included
     * @param effects business effects counted per key
     * @return how many step keys were delivered more than once: the fault's footprint on the broker
     */
    static long check(String what, Set<String> emitted, Collection<String> delivered, Map<String, Integer> effects) {
        Map<String, Integer> deliveries = new HashMap<>();
        delivered.forEach(k -> deliveries.merge(k, 1, Integer::sum));
        Set<String> lost = new TreeSet<>(emitted);
        lost.removeAll(deliveries.keySet());
        long redelivered = deliveries.values().stream().filter(n -> n > 1).count();
        log.info("{}: {} emitted, {} deliveries ({} keys delivered more than once), {} keys with effects", what,
                emitted.size(), delivered.size(), redelivered, effects.size());
        assertThat(lost).as("%s: emitted step keys never delivered", what).isEmpty();
        checkEffects(what, emitted, effects);
        return redelivered;
    }

    /** Exactly one effect for every key of {@code emitted}, and none for any other key. */
    static void checkEffects(String what, Set<String> emitted, Map<String, Integer> effects) {
        Set<String> missing = new TreeSet<>(emitted);
        missing.removeAll(effects.keySet());
        assertThat(missing).as("%s: keys without a business effect", what).isEmpty();
        Map<String, Integer> doubled = new HashMap<>();
        effects.forEach((k, n) -> {
            if (n != 1) {
                doubled.put(k, n);
            }
        });
        assertThat(doubled).as("%s: keys with more than one business effect", what).isEmpty();
        assertThat(effects.keySet()).as("%s: effects for keys nobody emitted", what).isSubsetOf(emitted);
    }
}
