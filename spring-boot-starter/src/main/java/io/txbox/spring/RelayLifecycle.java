package io.txbox.spring;

import io.txbox.relay.Relay;
import io.txbox.relay.RelayStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Starts the embedded relay when the application context has been refreshed and closes it when
 * the context stops. Its phase is below the web server's and the message listener containers',
 * so the relay starts before them and stops after them: messages that requests or listeners
 * send while they drain are still published. Closing is graceful ({@link Relay#close()}): the
 * in-flight batch finishes or rolls back within {@code txbox.relay.shutdown-timeout} and the
 * lanes are released, so another instance takes them over at once.
 */
final class RelayLifecycle implements SmartLifecycle {
    /** Starts before and stops after the web server (DEFAULT_PHASE - 2048) and listener containers. */
    static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

    private static final Logger log = LoggerFactory.getLogger(RelayLifecycle.class);

    private final Relay relay;

    RelayLifecycle(Relay relay) {
        this.relay = relay;
    }

    @Override
    public void start() {
        log.info("{} - starting the embedded relay", relay.id());
        relay.start();
    }

    @Override
    public void stop() {
        log.info("{} - stopping the embedded relay", relay.id());
        relay.close();
    }

    @Override
    public boolean isRunning() {
        return relay.status().state() == RelayStatus.State.RUNNING;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }
}
