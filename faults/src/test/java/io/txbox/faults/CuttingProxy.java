package io.txbox.faults;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A TCP proxy in front of a database that can lose a reply: once armed, the next bytes the
 * server sends are dropped and both sockets closed. Armed right before a COMMIT, the server
 * commits but the client never hears so: a commit whose outcome is unknown. It can lose a
 * request the same way: a COMMIT the client sent that the server never receives.
 */
final class CuttingProxy implements AutoCloseable {
    private final ServerSocket server;
    private final String host;
    private final int port;
    private final AtomicBoolean armed = new AtomicBoolean();
    private final AtomicReference<byte[]> requestMarker = new AtomicReference<>();
    private final AtomicInteger cuts = new AtomicInteger();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();

    CuttingProxy(String host, int port) throws IOException {
        this.host = host;
        this.port = port;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::accept, "cutting-proxy-accept");
        t.setDaemon(true);
        t.start();
    }

    int port() {
        return server.getLocalPort();
    }

    /** Drops the server's next reply (whichever connection gets one first) and cuts that connection. */
    void cutOnNextReply() {
        armed.set(true);
    }

    /** Drops the client's next request that contains {@code text} (in its wire bytes) and cuts that connection. */
    void cutOnNextRequestContaining(String text) {
        requestMarker.set(text.getBytes(StandardCharsets.UTF_8));
    }

    int cuts() {
        return cuts.get();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket(host, port);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(upstream);
                pump(client, upstream, false);
                pump(upstream, client, true);
            } catch (IOException e) {
                return;
            }
        }
    }

    private void pump(Socket from, Socket to, boolean replies) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    if (replies && armed.compareAndSet(true, false)) {
                        cuts.incrementAndGet();
                        break;
                    }
                    byte[] marker = requestMarker.get();
                    if (!replies && marker != null && contains(buf, n, marker)
                            && requestMarker.compareAndSet(marker, null)) {
                        cuts.incrementAndGet();
                        break;
                    }
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // the other side closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "cutting-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private static boolean contains(byte[] buf, int n, byte[] marker) {
        for (int i = 0; i + marker.length <= n; i++) {
            int j = 0;
            while (j < marker.length && buf[i + j] == marker[j]) {
                j++;
            }
            if (j == marker.length) {
                return true;
            }
        }
        return false;
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        sockets.forEach(CuttingProxy::closeQuietly);
    }
}
