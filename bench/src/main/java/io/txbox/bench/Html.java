package io.txbox.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

/**
 * A self-contained HTML page with inline SVG line charts: no scripts, no external files, so a
 * result opens anywhere and can be attached to an issue as it is.
 */
final class Html {
    private static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
    private static final int W = 760;
    private static final int H = 340;
    private static final int ML = 70;
    private static final int MR = 20;
    private static final int MT = 30;
    private static final int MB = 50;

    private final StringBuilder body = new StringBuilder();
    private final String title;

    Html(String title) {
        this.title = title;
    }

    /** One line: its name and points. */
    record Series(String name, double[] xs, double[] ys) {}

    /**
     * A dashed reference line with its label: at {@code at} on the x axis (the end of the
     * warm-up, say) when {@code onX}, else at {@code at} on the y axis (a target).
     */
    record Mark(boolean onX, double at, String label) {
        static Mark x(double at, String label) {
            return new Mark(true, at, label);
        }

        static Mark y(double at, String label) {
            return new Mark(false, at, label);
        }
    }

    /** A tick on the x axis with its own label. */
    record Tick(double x, String label) {}

    Html heading(String text) {
        body.append("<h2>").append(esc(text)).append("</h2>\n");
        return this;
    }

    Html paragraph(String text) {
        body.append("<p>").append(esc(text)).append("</p>\n");
        return this;
    }

    Html pre(String text) {
        body.append("<pre>").append(esc(text)).append("</pre>\n");
        return this;
    }

    /** Throughput over time: one point per second per series. */
    Html timeline(String chartTitle, String yLabel, List<Series> series) {
        return timeline(chartTitle, yLabel, series, List.of());
    }

    /** {@link #timeline} with reference lines (warm-up end, target). */
    Html timeline(String chartTitle, String yLabel, List<Series> series, List<Mark> marks) {
        return chart(chartTitle, "seconds since start", yLabel, series, null, marks);
    }

    /**
     * The latency distribution as a percentile plot: x runs in "nines" (90%, 99%, 99.9%...), so
     * the tail gets as much room as the median.
     */
    Html percentiles(String chartTitle, List<String> names, List<Histogram> histograms, double unitDivisor, String unit) {
        return percentiles(chartTitle, names, histograms, unitDivisor, unit, List.of());
    }

    /** {@link #percentiles} with reference lines (a latency target on the y axis). */
    Html percentiles(String chartTitle, List<String> names, List<Histogram> histograms, double unitDivisor, String unit,
            List<Mark> marks) {
        List<Series> series = new ArrayList<>();
        double maxNines = 1;
        for (int i = 0; i < histograms.size(); i++) {
            Histogram h = histograms.get(i);
            if (h.getTotalCount() == 0) {
                continue;
            }
            List<Double> xs = new ArrayList<>();
            List<Double> ys = new ArrayList<>();
            for (HistogramIterationValue v : h.percentiles(5)) {
                double p = v.getPercentileLevelIteratedTo() / 100.0;
                if (p >= 1.0) {
                    break;
                }
                double nines = -Math.log10(1 - p);
                xs.add(nines);
                ys.add(v.getValueIteratedTo() / unitDivisor);
            }
            double last = Math.min(6, Math.log10(Math.max(10, h.getTotalCount())));
            xs.add(last);
            ys.add(h.getMaxValue() / unitDivisor);
            maxNines = Math.max(maxNines, last);
            series.add(new Series(names.get(i), unbox(xs), unbox(ys)));
        }
        List<Tick> ticks = new ArrayList<>();
        String[] labels = {"0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"};
        for (int n = 0; n <= Math.ceil(maxNines) && n < labels.length; n++) {
            ticks.add(new Tick(n, labels[n]));
        }
        return chart(chartTitle, "percentile (last point: max)", unit, series, ticks, marks);
    }

    private static double[] unbox(List<Double> l) {
        double[] a = new double[l.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = l.get(i);
        }
        return a;
    }

    Html chart(String chartTitle, String xLabel, String yLabel, List<Series> series, List<Tick> xTicks) {
        return chart(chartTitle, xLabel, yLabel, series, xTicks, List.of());
    }

    Html chart(String chartTitle, String xLabel, String yLabel, List<Series> series, List<Tick> xTicks, List<Mark> marks) {
        double xmin = Double.MAX_VALUE;
        double xmax = -Double.MAX_VALUE;
        double ymax = 0;
        for (Series s : series) {
            for (double x : s.xs) {
                xmin = Math.min(xmin, x);
                xmax = Math.max(xmax, x);
            }
            for (double y : s.ys) {
                ymax = Math.max(ymax, y);
            }
        }
        for (Mark m : marks) {
            if (!m.onX()) {
                ymax = Math.max(ymax, m.at()); // a target above every value still shows
            }
        }
        if (series.isEmpty() || xmin == Double.MAX_VALUE) {
            body.append("<p><i>").append(esc(chartTitle)).append(": no data</i></p>\n");
            return this;
        }
        if (xTicks != null) {
            xmin = 0;
            xmax = Math.max(xmax, xTicks.get(xTicks.size() - 1).x());
        }
        if (xmax <= xmin) {
            xmax = xmin + 1;
        }
        ymax = niceCeil(ymax <= 0 ? 1 : ymax * 1.05);
        final double fxmin = xmin;
        final double fxmax = xmax;
        final double fymax = ymax;
        int pw = W - ML - MR;
        int ph = H - MT - MB;
        java.util.function.DoubleUnaryOperator sx = x -> ML + (x - fxmin) / (fxmax - fxmin) * pw;
        java.util.function.DoubleUnaryOperator sy = y -> MT + ph - y / fymax * ph;

        StringBuilder s = body;
        s.append("<figure><svg xmlns='http://www.w3.org/2000/svg' width='").append(W).append("' height='").append(H)
                .append("' viewBox='0 0 ").append(W).append(' ').append(H).append("' font-family='sans-serif' font-size='11'>\n");
        s.append("<text x='").append(W / 2).append("' y='16' text-anchor='middle' font-size='13' font-weight='bold'>")
                .append(esc(chartTitle)).append("</text>\n");
        // grid and y ticks
        for (int i = 0; i <= 5; i++) {
            double y = fymax * i / 5;
            double py = sy.applyAsDouble(y);
            s.append(String.format(Locale.ROOT, "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#ddd'/>", ML, py, W - MR, py));
            s.append(String.format(Locale.ROOT, "<text x='%d' y='%.1f' text-anchor='end'>%s</text>%n", ML - 5, py + 4, tickLabel(y)));
        }
        // x ticks
        List<Tick> ticks = xTicks;
        if (ticks == null) {
            ticks = new ArrayList<>();
            double step = niceStep((xmax - xmin) / 8);
            for (double x = Math.ceil(xmin / step) * step; x <= xmax + 1e-9; x += step) {
                ticks.add(new Tick(x, tickLabel(x)));
            }
        }
        for (Tick t : ticks) {
            double px = sx.applyAsDouble(t.x());
            s.append(String.format(Locale.ROOT, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#eee'/>", px, MT, px, MT + ph));
            s.append(String.format(Locale.ROOT, "<text x='%.1f' y='%d' text-anchor='middle'>%s</text>%n", px, MT + ph + 15, esc(t.label())));
        }
        s.append(String.format(Locale.ROOT, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#888'/>%n", ML, MT, pw, ph));
        s.append(String.format(Locale.ROOT, "<text x='%d' y='%d' text-anchor='middle'>%s</text>%n", ML + pw / 2, H - 12, esc(xLabel)));
        s.append(String.format(Locale.ROOT, "<text x='14' y='%d' text-anchor='middle' transform='rotate(-90 14 %d)'>%s</text>%n",
                MT + ph / 2, MT + ph / 2, esc(yLabel)));
        for (int i = 0; i < series.size(); i++) {
            Series ser = series.get(i);
            String color = COLORS[i % COLORS.length];
            StringBuilder pts = new StringBuilder();
            for (int j = 0; j < ser.xs.length; j++) {
                pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", sx.applyAsDouble(ser.xs[j]), sy.applyAsDouble(ser.ys[j])));
            }
            s.append("<polyline fill='none' stroke-width='1.8' stroke='").append(color).append("' points='").append(pts).append("'/>\n");
            int ly = MT + 14 + i * 15;
            s.append(String.format(Locale.ROOT, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='%s' stroke-width='3'/>", ML + 10, ly - 4, ML + 28, ly - 4, color));
            s.append(String.format(Locale.ROOT, "<text x='%d' y='%d'>%s</text>%n", ML + 33, ly, esc(ser.name)));
        }
        for (Mark m : marks) {
            if (m.onX() && (m.at() < fxmin || m.at() > fxmax)) {
                continue;
            }
            double x1 = m.onX() ? sx.applyAsDouble(m.at()) : ML;
            double x2 = m.onX() ? x1 : W - MR;
            double y1 = m.onX() ? MT : sy.applyAsDouble(m.at());
            double y2 = m.onX() ? MT + ph : y1;
            s.append(String.format(Locale.ROOT, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#c00' stroke-dasharray='6 4'/>",
                    x1, y1, x2, y2));
            s.append(String.format(Locale.ROOT, "<text x='%.1f' y='%.1f' fill='#c00' text-anchor='%s'>%s</text>%n",
                    m.onX() ? x1 + 4 : W - MR - 4, m.onX() ? MT + ph - 6 : y1 - 4, m.onX() ? "start" : "end", esc(m.label())));
        }
        s.append("</svg></figure>\n");
        return this;
    }

    void write(Path file) throws IOException {
        Files.createDirectories(file.toAbsolutePath().getParent());
        String page = "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>" + esc(title) + "</title>\n"
                + "<style>body{font-family:sans-serif;max-width:820px;margin:20px auto;color:#222}"
                + "pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}figure{margin:10px 0}</style>"
                + "</head><body>\n<h1>" + esc(title) + "</h1>\n" + body + "</body></html>\n";
        Files.writeString(file, page, StandardCharsets.UTF_8);
    }

    private static String tickLabel(double v) {
        if (v == Math.rint(v) && Math.abs(v) < 1e12) {
            return String.format(Locale.ROOT, "%,d", (long) v);
        }
        return String.format(Locale.ROOT, "%.2f", v);
    }

    private static double niceCeil(double v) {
        double step = niceStep(v / 5);
        return Math.ceil(v / step) * step;
    }

    private static double niceStep(double raw) {
        if (raw <= 0) {
            return 1;
        }
        double mag = Math.pow(10, Math.floor(Math.log10(raw)));
        double n = raw / mag;
        double nice = n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10;
        return nice * mag;
    }

    static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;");
    }
}
