package dev.sextant.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.topology.Topology;
import java.util.List;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

class TopologyLoaderPropertiesTest {

    private static final String TALK = TopologyLoaderTest.talk();

    @Provide
    Arbitrary<List<TextEdit>> edits() {
        return TextEdit.any().list().ofMinSize(1).ofMaxSize(3);
    }

    @Property(tries = 1000)
    void load_mutatedTalkYaml_givesTopologyOrTopologyException(
            @ForAll("edits") List<TextEdit> edits) {
        String text = TALK;
        for (TextEdit e : edits) {
            text = e.apply(text);
        }
        int lines = TextEdit.lines(text);
        try {
            Topology t = TopologyLoader.load(text, "talk.yaml");
            assertThat(t).isNotNull();
        } catch (TopologyException e) {
            assertThat(e.problems()).isNotEmpty().allSatisfy(p -> {
                assertThat(p.source()).isEqualTo("talk.yaml");
                assertThat(p.line()).isBetween(0, lines + 1);
                assertThat(p.message()).isNotBlank();
                if (p.message().startsWith("YAML syntax")) { // a mistake in the text is somewhere in it
                    assertThat(p.line()).as("%s", p).isPositive();
                }
            });
        }
    }
}
