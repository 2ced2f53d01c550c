package io.txbox.relay.standalone;

import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/**
 * SIGTERM and SIGINT handling for the relay process. The JVM's default turns them into an exit
 * with status 143 or 130 after the shutdown hooks; handling them lets the process finish its
 * graceful stop on the main thread and exit with 0, which orchestrators read as a clean stop.
 */
final class Signals {
    private static final Logger log = LoggerFactory.getLogger(Signals.class);

    private Signals() {}

    /** Calls {@code handler} with {@code TERM} or {@code INT} when one arrives; where that is impossible, logs and relies on the shutdown hook. */
    static void onTermination(Consumer<String> handler) {
        for (String name : List.of("TERM", "INT")) {
            try {
                Signal.handle(new Signal(name), s -> handler.accept(s.getName()));
            } catch (IllegalArgumentException | UnsupportedOperationException e) {
                // -Xrs, or a platform without the signal: the shutdown hook still stops gracefully
                log.debug("cannot handle SIG{}: {}", name, e.toString());
            }
        }
    }
}
