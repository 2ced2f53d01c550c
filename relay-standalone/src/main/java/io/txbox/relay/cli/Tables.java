package io.txbox.relay.cli;

import java.util.List;

/** Plain aligned text tables for the human-readable output. */
final class Tables {
    private Tables() {}

    /** Prints {@code rows} (the first is the header) with columns padded to their widest cell. */
    static void print(AdminCommand command, List<String[]> rows) {
        int[] width = new int[rows.get(0).length];
        for (String[] row : rows) {
            for (int i = 0; i < row.length; i++) {
                width[i] = Math.max(width[i], row[i].length());
            }
        }
        for (String[] row : rows) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < row.length; i++) {
                sb.append(row[i]);
                if (i < row.length - 1) {
                    sb.append(" ".repeat(width[i] - row[i].length() + 2));
                }
            }
            command.print(sb.toString());
        }
    }
}
