package io.txbox.saga;

import com.rabbitmq.client.ConnectionFactory;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/** Checks, before anything starts, that what the demo needs answers; says how to fix it if not. */
final class Preflight {
    private Preflight() {}

    static void postgres(SagaSettings s) {
        DriverManager.setLoginTimeout(5);
        Properties props = new Properties();
        props.setProperty("user", s.jdbcUser());
        props.setProperty("password", s.jdbcPassword());
        props.setProperty("connectTimeout", "5");
        try (Connection c = DriverManager.getConnection(s.jdbcUrl(), props)) {
            c.isValid(5);
        } catch (SQLException e) {
            String start = s.mariadb() ? "start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd"
                    : "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start";
            throw new SagaException((s.mariadb() ? "MariaDB" : "PostgreSQL") + " does not answer at " + s.jdbcUrl()
                    + " as user " + s.jdbcUser() + ": " + e.getMessage() + "\n  Start it with:  " + start
                    + "\n  or point the demo elsewhere with --jdbc-url (and --jdbc-user, --jdbc-password).");
        }
    }

    static ConnectionFactory rabbit(SagaSettings s) {
        ConnectionFactory factory = new ConnectionFactory();
        try {
            factory.setUri(s.amqpUri());
        } catch (Exception e) {
            throw new SagaException("--amqp-uri is not an AMQP URI: " + s.amqpUri() + " (" + e.getMessage() + ")");
        }
        factory.setConnectionTimeout(5_000);
        factory.setAutomaticRecoveryEnabled(true);
        try (var c = factory.newConnection("saga-preflight")) {
            return factory;
        } catch (Exception e) {
            throw new SagaException("RabbitMQ does not answer at " + redact(s.amqpUri()) + ": " + e
                    + "\n  Start it with:  rabbitmq-server -detached\n  or point the demo elsewhere with --amqp-uri.");
        }
    }

    static void kafka(String bootstrap) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10_000);
        try (Admin admin = Admin.create(props)) {
            admin.describeCluster().nodes().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new SagaException("Kafka does not answer at " + bootstrap + ": " + e
                    + "\n  Leave out --kafka to let the demo start a broker of its own.");
        }
    }

    /** The URI without its password. */
    static String redact(String uri) {
        return uri.replaceAll("//([^:/@]+):[^@]*@", "//$1:***@");
    }
}
