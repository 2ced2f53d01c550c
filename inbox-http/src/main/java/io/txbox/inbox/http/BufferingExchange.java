package io.txbox.inbox.http;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpPrincipal;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An exchange that hands the wrapped handler the already-read request body and keeps its
 * response in memory, so the response can be stored before it is sent.
 */
final class BufferingExchange extends HttpExchange {
    private final HttpExchange real;
    private InputStream requestBody;
    private OutputStream responseBody;
    private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    private final Headers responseHeaders = new Headers();
    private int status = -1;

    BufferingExchange(HttpExchange real, byte[] body) {
        this.real = real;
        this.requestBody = new ByteArrayInputStream(body);
        this.responseBody = buffer;
    }

    HttpResponseData response() {
        if (status < 0) {
            throw new IllegalStateException("the handler returned without sendResponseHeaders");
        }
        Map<String, List<String>> headers = new LinkedHashMap<>(responseHeaders);
        return new HttpResponseData(status, headers, buffer.toByteArray());
    }

    @Override
    public Headers getRequestHeaders() {
        return real.getRequestHeaders();
    }

    @Override
    public Headers getResponseHeaders() {
        return responseHeaders;
    }

    @Override
    public URI getRequestURI() {
        return real.getRequestURI();
    }

    @Override
    public String getRequestMethod() {
        return real.getRequestMethod();
    }

    @Override
    public HttpContext getHttpContext() {
        return real.getHttpContext();
    }

    @Override
    public void close() {
        // the real exchange is closed by the wrapper after the response was sent
    }

    @Override
    public InputStream getRequestBody() {
        return requestBody;
    }

    @Override
    public OutputStream getResponseBody() {
        return responseBody;
    }

    @Override
    public void sendResponseHeaders(int rCode, long responseLength) {
        this.status = rCode;
    }

    @Override
    public InetSocketAddress getRemoteAddress() {
        return real.getRemoteAddress();
    }

    @Override
    public int getResponseCode() {
        return status;
    }

    @Override
    public InetSocketAddress getLocalAddress() {
        return real.getLocalAddress();
    }

    @Override
    public String getProtocol() {
        return real.getProtocol();
    }

    @Override
    public Object getAttribute(String name) {
        return real.getAttribute(name);
    }

    @Override
    public void setAttribute(String name, Object value) {
        real.setAttribute(name, value);
    }

    @Override
    public void setStreams(InputStream i, OutputStream o) {
        if (i != null) {
            requestBody = i;
        }
        if (o != null) {
            responseBody = o;
        }
    }

    @Override
    public HttpPrincipal getPrincipal() {
        return real.getPrincipal();
    }
}
