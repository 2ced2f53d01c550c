package io.txbox.faults;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Child relay JVMs started ahead of need ({@link OrderRelayChild} without arguments), so a
 * history's relay start or restart does not wait for a JVM to boot on a busy machine. Each one
 * taken is replaced in the background.
 */
final class OrderSpares implements AutoCloseable {
    private static final AtomicInteger IDS = new AtomicInteger();
    private final LinkedBlockingQueue<Child> ready = new LinkedBlockingQueue<>();
    private final LinkedBlockingQueue<Child> all = new LinkedBlockingQueue<>();
    private volatile boolean closed;

    OrderSpares(int count) {
        for (int i = 0; i < count; i++) {
            startOne();
        }
    }

    /** A spare configured with {@code args}, once it printed {@link OrderRelayChild#READY}. */
    Child take(String id, String... args) throws IOException, InterruptedException {
        Child child = ready.poll(120, TimeUnit.SECONDS);
        if (child == null) {
            throw new IllegalStateException("no spare relay JVM started within 120 s");
        }
        startOne();
        OutputStream in = child.process.getOutputStream();
        in.write((String.join(" ", args) + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
        child.awaitOutput(OrderRelayChild.READY, Duration.ofSeconds(60));
        return child;
    }

    private void startOne() {
        Thread t = new Thread(() -> {
            try {
                Child c = Child.start(OrderRelayChild.class, "order-spare-" + IDS.incrementAndGet(),
                        OrderRelayChild.WAITING);
                all.add(c);
                if (closed) {
                    c.close();
                } else {
                    ready.add(c);
                }
            } catch (Exception e) {
                // take() times out and names the problem; the child's log has the cause
            }
        }, "order-spare-start");
        t.setDaemon(true);
        t.start();
    }

    @Override
    public void close() throws InterruptedException {
        closed = true;
        for (Child c : all) {
            c.close();
        }
    }
}
