package dev.sextant.signal;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.regex.Pattern;

/**
 * Parser for the Prometheus text exposition format, version 0.0.4, the format of every engine's
 * {@code /metrics}.
 *
 * <p>It accepts the whole format: {@code # HELP} and {@code # TYPE} lines anywhere (before, between or after
 * their samples), other {@code #} comments, blank lines, label values with the escapes {@code \\}, {@code \"}
 * and {@code \n} and any other character (commas, braces, spaces), a trailing comma in a label set,
 * whitespace around tokens, the values {@code +Inf}, {@code -Inf}, {@code Inf} and {@code NaN}, and optional
 * millisecond timestamps. Samples are grouped into families: {@code x_bucket}/{@code x_count}/{@code x_sum}
 * join histogram (or summary) {@code x}, {@code x_created} joins counter {@code x_total}; a sample without a
 * declared family forms an {@link MetricType#UNTYPED} family of its own name.
 *
 * <p>It never throws on any text. A line it cannot use is skipped and reported as a {@link ParseProblem};
 * every other line still counts. Choosing which metrics matter is the caller's business (see
 * {@link EngineMetrics}); nothing here knows about vLLM.
 */
public final class PrometheusText {
    private static final int MAX_PROBLEM_LINE = 200;
    private static final Pattern NUMBER = Pattern.compile("[+-]?(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][+-]?\\d+)?");
    private static final Pattern TIMESTAMP = Pattern.compile("[+-]?\\d{1,19}");
    private static final String[] CHILD_SUFFIXES = {"_bucket", "_count", "_sum", "_created", "_total"};

    private PrometheusText() {
    }

    /**
     * Parses one scrape.
     *
     * @param text the whole response body; lines end with {@code \n} (a {@code \r} before it is ignored)
     * @return the families and the problems; never {@code null}
     * @throws NullPointerException if {@code text} is {@code null}
     */
    public static Scrape parse(CharSequence text) {
        String s = text.toString();
        List<ParseProblem> problems = new ArrayList<>();
        Map<String, MetricType> types = new HashMap<>();
        Map<String, String> helps = new HashMap<>();
        List<Sample> samples = new ArrayList<>();
        Map<String, Integer> sampleLines = new LinkedHashMap<>();
        int lineNumber = 0;
        int start = 0;
        while (start <= s.length()) {
            int end = s.indexOf('\n', start);
            if (end < 0) {
                end = s.length();
            }
            lineNumber++;
            String line = s.substring(start, end);
            if (line.endsWith("\r")) {
                line = line.substring(0, line.length() - 1);
            }
            String error = parseLine(line, types, helps, samples);
            if (error != null) {
                problems.add(new ParseProblem(lineNumber, cut(line), error));
            }
            start = end + 1;
        }
        return new Scrape(group(types, helps, samples), problems);
    }

    private static String cut(String line) {
        return line.length() <= MAX_PROBLEM_LINE ? line : line.substring(0, MAX_PROBLEM_LINE) + "…";
    }

    /** Parses one line into the accumulators; returns an error message, or {@code null} when the line is fine. */
    private static String parseLine(String line, Map<String, MetricType> types, Map<String, String> helps,
                                    List<Sample> samples) {
        Cursor c = new Cursor(line);
        c.skipBlanks();
        if (c.atEnd()) {
            return null;
        }
        if (c.peek() == '#') {
            return parseComment(c, types, helps);
        }
        String name = c.metricName();
        if (name == null) {
            return "expected a metric name";
        }
        boolean blank = c.skipBlanks();
        Map<String, String> labels = Map.of();
        if (!c.atEnd() && c.peek() == '{') {
            c.next();
            labels = new HashMap<>();
            String error = parseLabels(c, labels);
            if (error != null) {
                return error;
            }
            blank = c.skipBlanks();
        }
        if (c.atEnd()) {
            return "missing value";
        }
        if (!blank) {
            return "expected blank before the value";
        }
        String valueToken = c.token();
        if (valueToken.isEmpty()) {
            return "missing value";
        }
        double value;
        try {
            value = parseValue(valueToken);
        } catch (NumberFormatException e) {
            return "invalid value \"" + cut(valueToken) + "\"";
        }
        c.skipBlanks();
        OptionalLong timestamp = OptionalLong.empty();
        if (!c.atEnd()) {
            String ts = c.token();
            if (!TIMESTAMP.matcher(ts).matches()) {
                return "invalid timestamp \"" + cut(ts) + "\"";
            }
            try {
                timestamp = OptionalLong.of(Long.parseLong(ts));
            } catch (NumberFormatException e) {
                return "timestamp out of range \"" + ts + "\"";
            }
            c.skipBlanks();
            if (!c.atEnd()) {
                return "unexpected text after the timestamp";
            }
        }
        samples.add(new Sample(name, labels, value, timestamp));
        return null;
    }

    private static String parseComment(Cursor c, Map<String, MetricType> types, Map<String, String> helps) {
        c.next();
        c.skipBlanks();
        String keyword = c.token();
        boolean help = keyword.equals("HELP");
        if (!help && !keyword.equals("TYPE")) {
            return null; // an ordinary comment
        }
        if (!c.skipBlanks()) {
            return "expected a metric name after " + keyword;
        }
        String name = c.metricName();
        if (name == null) {
            return "expected a metric name after " + keyword;
        }
        boolean blank = c.skipBlanks();
        if (help) {
            if (!blank && !c.atEnd()) {
                return "expected blank after the metric name";
            }
            String text = c.rest();
            StringBuilder out = new StringBuilder(text.length());
            for (int i = 0; i < text.length(); i++) {
                char ch = text.charAt(i);
                if (ch == '\\' && i + 1 < text.length() && (text.charAt(i + 1) == '\\' || text.charAt(i + 1) == 'n')) {
                    out.append(text.charAt(++i) == 'n' ? '\n' : '\\');
                } else {
                    out.append(ch);
                }
            }
            if (helps.containsKey(name)) {
                return "second HELP for " + name;
            }
            helps.put(name, out.toString());
            return null;
        }
        String word = c.token();
        c.skipBlanks();
        MetricType type = word.isEmpty() ? null : MetricType.fromWord(word);
        if (type == null || !c.atEnd()) {
            return "unknown metric type \"" + cut(word) + "\"";
        }
        if (types.containsKey(name)) {
            return "second TYPE for " + name;
        }
        types.put(name, type);
        return null;
    }

    /** Parses after the opening brace through the closing one. */
    private static String parseLabels(Cursor c, Map<String, String> labels) {
        while (true) {
            c.skipBlanks();
            if (c.atEnd()) {
                return "unterminated label set";
            }
            if (c.peek() == '}') {
                c.next();
                return null;
            }
            String labelName = c.labelName();
            if (labelName == null) {
                return "expected a label name";
            }
            c.skipBlanks();
            if (c.atEnd() || c.next() != '=') {
                return "expected '=' after label " + labelName;
            }
            c.skipBlanks();
            if (c.atEnd() || c.next() != '"') {
                return "expected '\"' to open the value of label " + labelName;
            }
            StringBuilder value = new StringBuilder();
            while (true) {
                if (c.atEnd()) {
                    return "unterminated value of label " + labelName;
                }
                char ch = c.next();
                if (ch == '"') {
                    break;
                }
                if (ch == '\\') {
                    if (c.atEnd()) {
                        return "unterminated value of label " + labelName;
                    }
                    char esc = c.next();
                    switch (esc) {
                        case '\\' -> value.append('\\');
                        case '"' -> value.append('"');
                        case 'n' -> value.append('\n');
                        default -> {
                            return "invalid escape \\" + esc + " in label " + labelName;
                        }
                    }
                } else {
                    value.append(ch);
                }
            }
            if (labels.put(labelName, value.toString()) != null) {
                return "duplicate label " + labelName;
            }
            c.skipBlanks();
            if (c.atEnd()) {
                return "unterminated label set";
            }
            char sep = c.next();
            if (sep == '}') {
                return null;
            }
            if (sep != ',') {
                return "expected ',' or '}' after label " + labelName;
            }
        }
    }

    /** A sample or bucket value: a Go-style float, {@code [+-]Inf} or {@code NaN}, case-insensitively. */
    static double parseValue(String token) {
        switch (token.toLowerCase(java.util.Locale.ROOT)) {
            case "+inf", "inf" -> {
                return Double.POSITIVE_INFINITY;
            }
            case "-inf" -> {
                return Double.NEGATIVE_INFINITY;
            }
            case "nan", "+nan", "-nan" -> {
                return Double.NaN;
            }
            default -> {
                // Double.parseDouble alone would also take "Infinity", "0x1p3" and "1d"
                if (!NUMBER.matcher(token).matches()) {
                    throw new NumberFormatException(token);
                }
                return Double.parseDouble(token);
            }
        }
    }

    /** Groups samples into families once every declaration is known, since HELP/TYPE may come last. */
    private static Map<String, MetricFamily> group(Map<String, MetricType> types, Map<String, String> helps,
                                                   List<Sample> samples) {
        Map<String, List<Sample>> byFamily = new LinkedHashMap<>();
        for (Sample sample : samples) {
            byFamily.computeIfAbsent(familyOf(sample.name(), types), k -> new ArrayList<>()).add(sample);
        }
        Map<String, MetricFamily> families = new LinkedHashMap<>();
        byFamily.forEach((name, list) -> families.put(name,
                new MetricFamily(name, types.getOrDefault(name, MetricType.UNTYPED), helps.get(name), list)));
        // declared families without samples are still reported: "declared but empty" is information
        types.forEach((name, type) -> families.putIfAbsent(name, new MetricFamily(name, type, helps.get(name), List.of())));
        return families;
    }

    private static String familyOf(String sampleName, Map<String, MetricType> types) {
        if (types.containsKey(sampleName)) {
            return sampleName;
        }
        for (String suffix : CHILD_SUFFIXES) {
            if (!sampleName.endsWith(suffix)) {
                continue;
            }
            String base = sampleName.substring(0, sampleName.length() - suffix.length());
            MetricType type = types.get(base);
            boolean fits = switch (suffix) {
                case "_bucket" -> type == MetricType.HISTOGRAM;
                case "_count", "_sum" -> type == MetricType.HISTOGRAM || type == MetricType.SUMMARY;
                case "_created" -> type == MetricType.HISTOGRAM || type == MetricType.SUMMARY || type == MetricType.COUNTER;
                default -> type == MetricType.COUNTER; // _total of a counter declared without it
            };
            if (fits) {
                return base;
            }
            if (suffix.equals("_created") && types.get(base + "_total") == MetricType.COUNTER) {
                return base + "_total";
            }
        }
        return sampleName;
    }

    /** A position in one line. */
    private static final class Cursor {
        private final String line;
        private int pos;

        Cursor(String line) {
            this.line = line;
        }

        boolean atEnd() {
            return pos >= line.length();
        }

        char peek() {
            return line.charAt(pos);
        }

        char next() {
            return line.charAt(pos++);
        }

        /** Skips spaces and tabs; true when it skipped at least one. */
        boolean skipBlanks() {
            int from = pos;
            while (pos < line.length() && (line.charAt(pos) == ' ' || line.charAt(pos) == '\t')) {
                pos++;
            }
            return pos > from;
        }

        /** The characters up to the next blank or the end. */
        String token() {
            int from = pos;
            while (pos < line.length() && line.charAt(pos) != ' ' && line.charAt(pos) != '\t') {
                pos++;
            }
            return line.substring(from, pos);
        }

        String rest() {
            String r = line.substring(pos);
            pos = line.length();
            return r;
        }

        /** {@code [a-zA-Z_:][a-zA-Z0-9_:]*}, or {@code null}. */
        String metricName() {
            return identifier(true);
        }

        /** {@code [a-zA-Z_][a-zA-Z0-9_]*}, or {@code null}. */
        String labelName() {
            return identifier(false);
        }

        private String identifier(boolean colon) {
            int from = pos;
            while (pos < line.length()) {
                char ch = line.charAt(pos);
                boolean ok = ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch == '_' || colon && ch == ':'
                        || pos > from && ch >= '0' && ch <= '9';
                if (!ok) {
                    break;
                }
                pos++;
            }
            return pos > from ? line.substring(from, pos) : null;
        }
    }
}
