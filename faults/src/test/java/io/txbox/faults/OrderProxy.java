package io.txbox.faults;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy in front of a broker the whole machine shares, so a test can take the broker
 * away from its own clients only: {@link #down()} closes every connection and refuses new ones
 * (accepted, then closed at once) until {@link #up()}, as a stopped node would.
 */
final class OrderProxy implements AutoCloseable {
    private final ServerSocket server;
    private final String host;
    private final int port;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean down;

    OrderProxy(String host, int port) throws IOException {
        this.host = host;
        this.port = port;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::accept, "order-proxy-accept");
        t.setDaemon(true);
        t.start();
    }

    int port() {
        return server.getLocalPort();
    }

    /** Closes every proxied connection and refuses new ones. */
    void down() {
        down = true;
        sockets.forEach(OrderProxy::closeQuietly);
        sockets.clear();
    }

    /** Accepts and forwards connections again. */
    void up() {
        down = false;
    }

    private void accept() {
        while (!server.isClosed()) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return;
            }
            if (down) {
                closeQuietly(client);
                continue;
            }
            try {
                Socket upstream = new Socket(host, port);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(upstream);
                pump(client, upstream);
                pump(upstream, client);
            } catch (IOException e) {
                closeQuietly(client);
            }
        }
    }

    private void pump(Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // the other side closed, or down() cut it
            } finally {
                closeQuietly(from);
                closeQuietly(to);
                sockets.remove(from);
                sockets.remove(to);
            }
        }, "order-proxy-pump");
        t.setDaemon(true);
        t.start();
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
        sockets.forEach(OrderProxy::closeQuietly);
    }
}
