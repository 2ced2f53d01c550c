package io.txbox.saga;

import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;

/** Reads where the orders are, from the services' tables, for progress lines and the drain. */
final class Progress {
    record Snapshot(long accepted, long paid, long declined, long shipped, long completed, long cancelled,
            long duplicateDeliveries) {
        long finished() {
            return completed + cancelled;
        }
    }

    private final SagaReport.Schemas s;
    private final String sql;
    private final long startNanos = System.nanoTime();

    Progress(SagaReport.Schemas s) {
        this.s = s;
        this.sql = "SELECT (SELECT count(*) FROM " + s.order() + ".orders),"
                + " (SELECT count(*) FROM " + s.payment() + ".payments WHERE approved),"
                + " (SELECT count(*) FROM " + s.payment() + ".payments WHERE NOT approved),"
                + " (SELECT count(*) FROM " + s.shipping() + ".shipments),"
                + " (SELECT count(*) FROM " + s.order() + ".orders WHERE status = 'COMPLETED'),"
                + " (SELECT count(*) FROM " + s.order() + ".orders WHERE status = 'CANCELLED'),"
                + " (" + SagaReport.duplicateDeliveries(s) + ")";
    }

    Snapshot read(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return new Snapshot(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5),
                    rs.getLong(6), rs.getLong(7));
        }
    }

    double seconds() {
        return (System.nanoTime() - startNanos) / 1e9;
    }

    void print(PrintStream out, Snapshot p, int orders, long duplicateRequests) {
        out.println(line(p, orders, duplicateRequests, seconds()));
    }

    /**
     * One progress line. The rates are of orders accepted and of orders finished (completed or
     * cancelled) so far: early on orders are accepted long before any finishes.
     */
    static String line(Snapshot p, int orders, long duplicateRequests, double t) {
        return String.format(Locale.ROOT, "[%5.1fs] accepted %d/%d  paid %d  declined %d  shipped %d  completed %d"
                        + "  cancelled %d  | duplicates: deliveries %d, requests %d  | %.0f accepted/s, %.0f finished/s",
                t, p.accepted(), orders, p.paid(), p.declined(), p.shipped(), p.completed(), p.cancelled(),
                p.duplicateDeliveries(), duplicateRequests, t > 0 ? p.accepted() / t : 0.0,
                t > 0 ? p.finished() / t : 0.0);
    }
}
