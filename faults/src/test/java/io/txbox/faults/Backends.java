package io.txbox.faults;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The host and port of a PostgreSQL or MariaDB JDBC URL, and the URL pointed at another port. */
final class Backends {
    private static final Pattern URL = Pattern.compile("jdbc:(postgresql|mariadb|mysql)://([^/:]+)(?::(\\d+))?/(.*)");

    private Backends() {}

    /** {@code jdbcUrl} pointed at 127.0.0.1:{@code port} instead of its own host and port. */
    static String viaPort(String jdbcUrl, int port) {
        Matcher m = URL.matcher(jdbcUrl);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a jdbc:<postgresql|mariadb|mysql>://host[:port]/... URL: " + jdbcUrl);
        }
        return "jdbc:" + m.group(1) + "://127.0.0.1:" + port + "/" + m.group(4);
    }

    static String host(String jdbcUrl) {
        Matcher m = URL.matcher(jdbcUrl);
        if (!m.matches()) {
            throw new IllegalArgumentException(jdbcUrl);
        }
        return m.group(2);
    }

    static int port(String jdbcUrl) {
        Matcher m = URL.matcher(jdbcUrl);
        if (!m.matches()) {
            throw new IllegalArgumentException(jdbcUrl);
        }
        if (m.group(3) != null) {
            return Integer.parseInt(m.group(3));
        }
        return m.group(1).equals("postgresql") ? 5432 : 3306;
    }
}
