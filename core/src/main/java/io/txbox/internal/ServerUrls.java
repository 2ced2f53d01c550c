package io.txbox.internal;

import io.txbox.Texts;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Arrays;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The rule for a URL option that names one server ({@code amqp://}, {@code redis://}): a known
 * scheme, a host name that parses, and if there is a port, a number from 1 to 65535. Client
 * libraries read a port that is not a number as part of the host name, or an out-of-range port
 * as their default one, and then fail much later with a misleading message, or connect to
 * another server; this rule refuses such a URL when it is configured.
 */
public final class ServerUrls {
    private ServerUrls() {}

    /**
     * What is wrong with {@code url}, as the end of a sentence that starts with the (masked)
     * URL, or null if it has one of {@code schemes} (case-insensitive), a host and a valid port.
     * The text never repeats the URL or its user information, which may hold a password.
     */
    public static @Nullable String problem(String url, String... schemes) {
        URI u;
        try {
            u = new URI(url);
        } catch (URISyntaxException e) {
            // the message would repeat the whole URL, password included
            return "is not a valid URI (" + e.getReason() + " at index " + e.getIndex() + ")";
        }
        String scheme = u.getScheme();
        if (scheme == null || Arrays.stream(schemes).noneMatch(scheme::equalsIgnoreCase)) {
            return "must start with " + Arrays.stream(schemes).map(s -> s + "://").collect(Collectors.joining(" or "));
        }
        String authority = u.getRawAuthority();
        if (authority == null || authority.isEmpty()) {
            return "names no host";
        }
        String hostPort = authority.substring(authority.lastIndexOf('@') + 1);
        int portColon = hostPort.lastIndexOf(':');
        if (portColon >= 0 && hostPort.lastIndexOf(']') > portColon) {
            portColon = -1; // a colon inside an IPv6 literal
        }
        String port = portColon < 0 ? null : hostPort.substring(portColon + 1);
        if (port != null && !port.matches("[0-9]{1,5}")) {
            return "has port " + Texts.quote(port) + ", which is not a number from 1 to 65535";
        }
        if (port != null && (Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65535)) {
            return "has port " + port + ", which is not from 1 to 65535";
        }
        if (u.getHost() == null) {
            String host = portColon < 0 ? hostPort : hostPort.substring(0, portColon);
            return host.isEmpty() ? "names no host"
                    : "has host " + Texts.quote(host) + ", which is not a valid host name (letters, digits, dots and"
                            + " dashes; no underscores)";
        }
        return null;
    }
}
