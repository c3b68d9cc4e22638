package dev.sextant.sim;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.TextEdit;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Any two edits of a shipped scenario ({@link TextEdit}: a line dropped or doubled, a character changed or added, a
 * number replaced by one out of every range, a non-number or a collection, the text cut short) give a scenario or a
 * {@link ScenarioException} whose every problem names the file and a line of it, never another exception: the
 * fleet generator, the hardware and the topology included. The ranges that keep a run bounded are in
 * {@link ScenarioLoader}.
 */
class ScenarioLoaderPropertiesTest {
    private static final List<String> TEXTS;

    static {
        try (Stream<Path> s = Files.walk(ScenarioLoaderTest.SCENARIOS)) {
            List<String> texts = new ArrayList<>();
            for (Path p : s.filter(f -> f.toString().endsWith(".yaml")).sorted().toList()) {
                texts.add(Files.readString(p));
            }
            TEXTS = List.copyOf(texts);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Provide
    Arbitrary<TextEdit> edits() {
        return TextEdit.any();
    }

    /** Every shipped scenario; the one with a fleet block (read by its own code) a third of the time. */
    @Provide
    Arbitrary<String> scenarios() {
        String fleet = TEXTS.stream().filter(t -> t.contains("\nfleet:")).findFirst().orElseThrow();
        return Arbitraries.frequencyOf(net.jqwik.api.Tuple.of(2, Arbitraries.of(TEXTS)),
                net.jqwik.api.Tuple.of(1, Arbitraries.just(fleet)));
    }

    /** Every policy but the sweeps' variants, as a scenario's {@code policies} names them. */
    @Provide
    Arbitrary<String> baselines() {
        return Arbitraries.of("nearest", "round-robin", "least-request", "waterfall", "prefix-aware", "random",
                "legacy-feedback");
    }

    /**
     * An edited scenario that loads (every shipped one but those with a fleet block, for time) runs 20 simulated
     * seconds to the end under Sextant and another policy: every request generated is completed, shed or failed,
     * none served outside its residency, and nothing is thrown. The bounds the loader keeps are what make every such
     * run end (docs/evaluation.md, "Scenario file").
     */
    @Property(tries = 300)
    void editedScenarioThatLoads_runsToTheEnd_everyRequestAccountedFor(@ForAll("scenarios") String scenario,
            @ForAll("edits") TextEdit first, @ForAll("edits") TextEdit second, @ForAll("baselines") String other) {
        net.jqwik.api.Assume.that(!scenario.contains("\nfleet:"));
        Scenario s;
        try {
            s = ScenarioLoader.parse("edited.yaml", second.apply(first.apply(scenario)));
        } catch (ScenarioException e) {
            return; // the property below
        }
        Scenario shortRun = s.withDuration(Math.min(s.durationMs(), 20_000));
        for (String policy : List.of("sextant", other)) {
            Metrics m = Simulator.simulate(shortRun, policy, 1, null).metrics();
            assertThat(m.completed + m.shed + m.failed).as(policy).isEqualTo(m.generated);
            assertThat(m.residencyViolations).as(policy).isZero();
        }
    }

    @Property(tries = 1500)
    void load_editedScenario_givesScenarioOrProblemsAtItsLines(@ForAll("scenarios") String scenario,
            @ForAll("edits") TextEdit first, @ForAll("edits") TextEdit second) {
        String text = second.apply(first.apply(scenario));
        int lines = TextEdit.lines(text);
        try {
            assertThat(ScenarioLoader.parse("edited.yaml", text).topology().engines()).isNotEmpty();
        } catch (ScenarioException e) {
            assertThat(e.problems()).isNotEmpty().allSatisfy(p -> {
                assertThat(p.source()).isEqualTo("edited.yaml");
                assertThat(p.line()).isBetween(0, lines + 1);
                assertThat(p.message()).isNotBlank();
            });
        }
    }
}
