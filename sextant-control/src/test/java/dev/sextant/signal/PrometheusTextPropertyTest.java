package dev.sextant.signal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

class PrometheusTextPropertyTest {
    private static final String ALPHABET = "{}\"=,\\#\n\t :_le+-.eEInfNa0123456789abcxyz\r";
    private static final List<String> FIXTURES = List.of(
            Fixtures.read("vllm-metrics.txt"), Fixtures.read("sglang-metrics.txt"));

    /** One edit of a text: at {@code position} (taken modulo the length) apply {@code kind}. */
    record Edit(int kind, int position, String text) {
        String apply(String s) {
            int at = s.isEmpty() ? 0 : Math.floorMod(position, s.length());
            return switch (kind) {
                case 0 -> s.substring(0, at) + text + s.substring(at);               // insert
                case 1 -> s.substring(0, at) + s.substring(Math.min(s.length(), at + text.length() + 1)); // delete
                case 2 -> s.substring(0, at);                                         // truncate
                case 3 -> s.substring(0, at) + text + s.substring(Math.min(s.length(), at + text.length())); // overwrite
                default -> s.substring(at) + s.substring(0, at);                      // rotate: cuts a line in two
            };
        }
    }

    @Provide
    Arbitrary<List<Edit>> edits() {
        Arbitrary<Edit> edit = Combinators.combine(
                Arbitraries.integers().between(0, 4),
                Arbitraries.integers().between(0, Integer.MAX_VALUE),
                Arbitraries.strings().withChars(ALPHABET.toCharArray()).ofMinLength(1).ofMaxLength(8))
                .as(Edit::new);
        return edit.list().ofMinSize(1).ofMaxSize(12);
    }

    @Property(tries = 300)
    void parse_mutatedFixture_neverThrowsAndReportsOnlyRealLines(
            @ForAll @IntRange(min = 0, max = 1) int fixture, @ForAll("edits") List<Edit> edits) {
        String text = FIXTURES.get(fixture);
        for (Edit e : edits) {
            text = e.apply(text);
        }
        int lines = text.split("\n", -1).length;

        Scrape scrape = PrometheusText.parse(text);
        EngineMetrics.from(scrape);

        assertThat(scrape.problems()).allSatisfy(p -> assertThat(p.lineNumber()).isBetween(1, lines));
        int sampleCount = scrape.families().values().stream().mapToInt(f -> f.samples().size()).sum();
        assertThat(sampleCount + scrape.problems().size()).isLessThanOrEqualTo(lines);
    }

    @Property(tries = 300)
    void parse_garbageLines_neverThrows(@ForAll("garbage") List<String> lines) {
        String text = String.join("\n", lines);

        Scrape scrape = PrometheusText.parse(text);
        EngineMetrics.from(scrape);
        EngineMetrics.from(scrape, "m");

        assertThat(scrape.problems()).allSatisfy(p -> assertThat(p.lineNumber()).isPositive());
    }

    @Provide
    Arbitrary<List<String>> garbage() {
        Arbitrary<String> line = Arbitraries.oneOf(
                Arbitraries.strings().withChars(ALPHABET.toCharArray()).ofMaxLength(40),
                Arbitraries.strings().ofMaxLength(40),
                Arbitraries.of("# TYPE vllm:time_to_first_token_seconds histogram",
                        "vllm:time_to_first_token_seconds_bucket{le=\"NaN\"} 1",
                        "vllm:time_to_first_token_seconds_bucket{le=\"x\"} 1",
                        "vllm:time_to_first_token_seconds_bucket{le=\"-Inf\"} 1",
                        "vllm:time_to_first_token_seconds_bucket 3",
                        "vllm:time_to_first_token_seconds_count NaN",
                        "vllm:num_requests_running{model_name=\"m\"} -Inf"));
        return line.list().ofMaxSize(30);
    }

    @Property(tries = 300)
    void parse_anyLabelValueWrittenWithEscapes_readsBackUnchanged(
            @ForAll("labelValues") String value, @ForAll double number) {
        String escaped = value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
        String written = Double.isNaN(number) ? "NaN" : Double.isInfinite(number) ? (number > 0 ? "+Inf" : "-Inf")
                : Double.toString(number);

        Scrape scrape = PrometheusText.parse("m{l=\"" + escaped + "\",z=\"\"} " + written + "\n");

        assertThat(scrape.problems()).isEmpty();
        Sample sample = scrape.samples("m").get(0);
        assertThat(sample.labels()).isEqualTo(Map.of("l", value, "z", ""));
        assertThat(sample.value()).isEqualTo(number);
    }

    @Provide
    Arbitrary<String> labelValues() {
        return Arbitraries.oneOf(Arbitraries.strings().ofMaxLength(30),
                Arbitraries.strings().withChars(ALPHABET.toCharArray()).ofMaxLength(30));
    }
}
