package io.txbox.relay.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.IHelpSectionRenderer;

/**
 * Help text wrapped at spaces only. picocli wraps where a line break iterator allows, which
 * includes after a dot or a hyphen: {@code txbox.} at the end of one line and {@code
 * jdbc.url} on the next. Here every section but the synopsis is rendered on one long line per
 * paragraph and then wrapped at spaces to {@link #WIDTH} columns, so a key is never split.
 */
final class HelpLayout {
    /** Columns of the help text. */
    static final int WIDTH = 80;
    /** Wide enough that picocli itself breaks no paragraph. */
    private static final int UNWRAPPED = 1000;
    /** An option or command row: its names, at least two spaces, then its description. */
    private static final Pattern ROW = Pattern.compile("^(\\s*\\S.*?\\s{2,})\\S");

    private HelpLayout() {}

    /** Applies the layout to {@code cl} and its subcommands. */
    static void apply(CommandLine cl) {
        CommandLine.Model.UsageMessageSpec usage = cl.getCommandSpec().usageMessage();
        usage.width(UNWRAPPED);
        Map<String, IHelpSectionRenderer> sections = cl.getHelpSectionMap();
        for (String key : List.copyOf(sections.keySet())) {
            IHelpSectionRenderer original = sections.get(key);
            if (key.equals(CommandLine.Model.UsageMessageSpec.SECTION_KEY_SYNOPSIS)) {
                // picocli wraps the synopsis between options itself, aligned under the command
                sections.put(key, help -> {
                    usage.width(WIDTH);
                    try {
                        return original.render(help);
                    } finally {
                        usage.width(UNWRAPPED);
                    }
                });
            } else {
                boolean rows = key.equals(CommandLine.Model.UsageMessageSpec.SECTION_KEY_OPTION_LIST)
                        || key.equals(CommandLine.Model.UsageMessageSpec.SECTION_KEY_COMMAND_LIST);
                sections.put(key, help -> wrap(original.render(help), rows));
            }
        }
        cl.setHelpSectionMap(sections);
        cl.getSubcommands().values().forEach(HelpLayout::apply);
    }

    /**
     * {@code text} with each line longer than {@link #WIDTH} wrapped at spaces. A row's
     * continuation lines are indented two past its description column, as picocli does;
     * other lines keep their own indentation.
     */
    static String wrap(String text, boolean rows) {
        StringBuilder out = new StringBuilder(text.length() + 64);
        String[] lines = text.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            if (i > 0) {
                out.append('\n');
            }
            if (line.length() <= WIDTH) {
                out.append(line);
                continue;
            }
            String trimmed = line.stripTrailing();
            int lead = trimmed.length() - trimmed.stripLeading().length();
            Matcher row = ROW.matcher(trimmed);
            int indent = rows ? (row.find() ? row.group(1).length() : lead) + 2 : lead;
            out.append(String.join("\n", fill(trimmed, lead, indent)));
        }
        return out.toString();
    }

    private static List<String> fill(String line, int lead, int indent) {
        List<String> lines = new ArrayList<>();
        StringBuilder current = new StringBuilder(line.substring(0, lead));
        boolean empty = true;
        int start = lead;
        // the row's names and the spaces after them stay as they are on the first line
        Matcher row = ROW.matcher(line);
        if (indent > lead && row.find()) {
            current = new StringBuilder(row.group(1));
            start = row.group(1).length();
        }
        for (String word : line.substring(start).split(" +")) {
            if (!empty && current.length() + 1 + word.length() > WIDTH) {
                lines.add(current.toString());
                current = new StringBuilder(" ".repeat(indent));
                empty = true;
            }
            if (!empty) {
                current.append(' ');
            }
            current.append(word);
            empty = false;
        }
        lines.add(current.toString());
        return lines;
    }
}
