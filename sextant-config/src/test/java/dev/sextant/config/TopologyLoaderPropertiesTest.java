package dev.sextant.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.topology.Topology;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

class TopologyLoaderPropertiesTest {

    private static final String TALK = TopologyLoaderTest.talk();

    /** One edit of a text: which kind, where (a fraction of the length), and a character to use. */
    record Mutation(int kind, double where, char c) {
        String apply(String text) {
            List<String> lines = new ArrayList<>(Arrays.asList(text.split("\n", -1)));
            int line = Math.min(lines.size() - 1, (int) (where * lines.size()));
            int at = Math.min(text.length(), (int) (where * text.length()));
            return switch (kind) {
                case 0 -> {
                    lines.remove(line);
                    yield String.join("\n", lines);
                }
                case 1 -> {
                    lines.add(line, lines.get(line));
                    yield String.join("\n", lines);
                }
                case 2 -> at < text.length() ? text.substring(0, at) + c + text.substring(at + 1) : text + c;
                case 3 -> text.substring(0, at) + c + text.substring(at);
                default -> text.substring(0, at);
            };
        }
    }

    @Provide
    Arbitrary<Mutation> mutations() {
        Arbitrary<Character> chars = Arbitraries.oneOf(Arbitraries.of(':', '-', '{', '}', '[', ']', ',', ' ', '\t', '#',
                '"', '\'', '&', '*', '!', '|', '>', '%', '@', '\n', '0', '.', 'x'), Arbitraries.chars().ascii());
        return Combinators.combine(Arbitraries.integers().between(0, 4), Arbitraries.doubles().between(0, 1), chars)
                .as(Mutation::new);
    }

    @Provide
    Arbitrary<List<Mutation>> edits() {
        return mutations().list().ofMinSize(1).ofMaxSize(3);
    }

    @Property(tries = 600)
    void load_mutatedTalkYaml_givesTopologyOrTopologyException(
            @ForAll("edits") List<Mutation> edits) {
        String text = TALK;
        for (Mutation m : edits) {
            text = m.apply(text);
        }
        // lines as YAML counts them: a lone carriage return breaks a line too (YAML 1.2, 5.4)
        int lines = text.split("\r\n|\r|\n", -1).length;
        try {
            Topology t = TopologyLoader.load(text, "talk.yaml");
            assertThat(t).isNotNull();
        } catch (TopologyException e) {
            assertThat(e.problems()).isNotEmpty().allSatisfy(p -> {
                assertThat(p.source()).isEqualTo("talk.yaml");
                assertThat(p.line()).isBetween(0, lines + 1);
                assertThat(p.message()).isNotBlank();
            });
        }
    }
}
