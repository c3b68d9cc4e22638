package dev.sextant.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.topology.Topology;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.RandomGenerator;

/**
 * Fuzzes {@link TopologyLoader} with the repository's own YAML (examples/*.yaml, and the topology part and the whole
 * text of examples/scenarios/*.yaml) mutated byte by byte and structurally: lines deleted or duplicated, keys
 * duplicated, values replaced by the wrong type, huge numbers, NaN and infinities, deep nesting, anchors and alias
 * bombs, tags, tabs, a BOM, very long values, several documents. Every input must give a {@link Topology} or a
 * {@link TopologyException} whose problems name the file, a line within it and a message — never another exception,
 * never a hang (each load is bounded by a timeout far above its cost).
 *
 * <p>Size: {@code -Dsextant.fuzz.tries=N} (default 600), seed {@code -Dsextant.fuzz.seed}. The nightly-size run:
 * {@code mvn -B -pl sextant-config -am test -Dtest=TopologyLoaderFuzzTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Dsextant.fuzz.tries=100000}
 */
class TopologyLoaderFuzzTest {
    static final int TRIES = Integer.getInteger("sextant.fuzz.tries", 600);
    static final long SEED = Long.getLong("sextant.fuzz.seed", 20261129L);

    /** The seeds: every example, and each scenario's {@code topology:} block on its own. */
    static List<String> seeds() throws IOException {
        List<String> out = new ArrayList<>();
        out.add(Files.readString(Path.of("..", "examples", "talk.yaml")));
        try (Stream<Path> files = Files.list(Path.of("..", "examples", "scenarios"))) {
            for (Path p : files.filter(f -> f.toString().endsWith(".yaml")).sorted().toList()) {
                String text = Files.readString(p);
                out.add(text);
                int at = text.indexOf("\ntopology:\n");
                if (at >= 0) {
                    StringBuilder block = new StringBuilder();
                    for (String line : text.substring(at + 11).split("\n")) {
                        if (!line.startsWith("  ") && !line.isBlank()) {
                            break;
                        }
                        block.append(line.length() >= 2 ? line.substring(2) : line).append('\n');
                    }
                    out.add(block.toString());
                }
            }
        }
        return out;
    }

    /** One edit: which kind, where (a fraction of the text), how much, and a character. */
    record Edit(int kind, double where, int amount, char c) {
        String apply(String text) {
            List<String> lines = new ArrayList<>(Arrays.asList(text.split("\n", -1)));
            int line = Math.min(lines.size() - 1, (int) (where * lines.size()));
            int at = Math.min(text.length(), (int) (where * text.length()));
            String l = lines.get(line);
            int colon = l.indexOf(": ");
            return switch (kind) {
                case 0 -> join(remove(lines, line));
                case 1 -> join(insert(lines, line, l));
                case 2 -> at < text.length() ? text.substring(0, at) + c + text.substring(at + 1) : text + c;
                case 3 -> text.substring(0, at) + c + text.substring(at);
                case 4 -> text.substring(0, at);
                case 5 -> colon < 0 ? text : join(set(lines, line, l.substring(0, colon + 2)
                        + VALUES[Math.floorMod(amount, VALUES.length)]));
                case 6 -> colon < 0 ? text : join(insert(lines, line + 1, l.substring(0, colon + 2) + "7"));
                case 7 -> text.substring(0, at) + "[".repeat(amount * 100) + text.substring(at);
                case 8 -> text.substring(0, at) + "{a: ".repeat(amount * 20) + text.substring(at);
                case 9 -> BOMB + text;
                case 10 -> text + "\n---\n" + text;
                case 11 -> "\uFEFF" + text.replace("  ", "\t");
                case 12 -> colon < 0 ? text : join(set(lines, line, l.substring(0, colon + 2) + "x".repeat(amount * 4_000)));
                case 13 -> text + "\nextra_" + amount + ": {" + "k: v, ".repeat(amount * 40) + "}\n";
                default -> colon < 0 ? text : join(set(lines, line, l.substring(0, colon + 2) + "&a" + amount + " "
                        + l.substring(colon + 2))) + "\nalias_use: *a" + amount + "\n";
            };
        }

        private static List<String> remove(List<String> lines, int i) {
            lines.remove(i);
            return lines;
        }

        private static List<String> insert(List<String> lines, int i, String s) {
            lines.add(Math.min(i, lines.size()), s);
            return lines;
        }

        private static List<String> set(List<String> lines, int i, String s) {
            lines.set(i, s);
            return lines;
        }

        private static String join(List<String> lines) {
            return String.join("\n", lines);
        }
    }

    static final String[] VALUES = {"[]", "{}", "[1, [2, [3]]]", "{a: {b: c}}", "''", "~", "null", "true", "-1",
            "0", "1e400", "-1e400", "99999999999999999999999", "0x7fffffffffffffff", ".nan", ".NaN", ".inf", "-.inf",
            "1_000", "0o17", "2001-12-14t21:59:43.10-05:00", "!!binary aGVsbG8=", "!!java.lang.Runtime x",
            "!<tag:yaml.org,2002:str> 5", "\"\\u0000\"", "\"\\ud800\"", "|\n  block\n  text", ">-\n  folded",
            "*undefined", "<<: {a: 1}", "? complex\n: key", "'unterminated", "\"unterminated", "@reserved", "`tick",
            "- a\n- b", "{a: 1, a: 2}", "[a, b", "%YAML 1.1"};

    /** An alias bomb ("billion laughs", 9^7 values); the loader must refuse it without expanding it. */
    static final String BOMB = """
            a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
            b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
            c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
            d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
            e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
            f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
            g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
            """;

    static Arbitrary<List<Edit>> edits() {
        Arbitrary<Character> chars = Arbitraries.oneOf(Arbitraries.of(':', '-', '{', '}', '[', ']', ',', ' ', '\t', '#',
                '"', '\'', '&', '*', '!', '|', '>', '%', '@', '\n', '\r', '\0', '0', '.', 'x', '\uFFFF', '\ud800'),
                Arbitraries.chars());
        return Combinators.combine(Arbitraries.integers().between(0, 14), Arbitraries.doubles().between(0, 1),
                Arbitraries.integers().between(1, 25), chars).as(Edit::new).list().ofMinSize(1).ofMaxSize(4);
    }

    @Example
    void mutatedExamples_giveATopologyOrProblemsNamingFileLineAndField_neverAnotherException() throws Exception {
        List<String> seeds = seeds();
        RandomGenerator<List<Edit>> gen = edits().generator(100);
        Random random = new Random(SEED);
        ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "topology-fuzz");
            t.setDaemon(true); // a hung load must not keep the JVM alive
            return t;
        });
        Path file = Files.createTempFile("topology-fuzz", ".yaml");
        int loaded = 0;
        int refused = 0;
        long started = System.nanoTime();
        try {
            for (int i = 0; i < TRIES; i++) {
                // half the inputs start from talk.yaml, the one seed that is a whole topology (a scenario's block
                // leaves endpoints and ratings to the simulator), so that mutations that keep it valid are tried too
                String seed = seeds.get(random.nextBoolean() ? 0 : random.nextInt(seeds.size()));
                List<Edit> edits = gen.next(random).value();
                String text = seed;
                for (Edit e : edits) {
                    text = e.apply(text);
                }
                boolean viaFile = i % 10 == 0;
                byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
                if (viaFile && bytes.length > 0) {
                    bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256); // maybe not UTF-8 any more
                }
                String input = text;
                Future<Topology> f = worker.submit(() -> {
                    if (viaFile) {
                        Files.write(file, bytes);
                        return TopologyLoader.load(file);
                    }
                    return TopologyLoader.load(input, "fuzz.yaml");
                });
                try {
                    Topology t = f.get(20, TimeUnit.SECONDS);
                    assertThat(t).isNotNull();
                    loaded++;
                } catch (TimeoutException e) {
                    throw new AssertionError("input " + i + " (seed " + SEED + "): no answer within 20 s; edits "
                            + edits + "\n" + abbreviate(text));
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (!(cause instanceof TopologyException te)) {
                        throw new AssertionError("input " + i + " (seed " + SEED + "): " + cause + "; edits " + edits
                                + "\n" + abbreviate(text), cause);
                    }
                    refused++;
                    String source = viaFile ? file.toString() : "fuzz.yaml";
                    // lines as YAML counts them: a lone carriage return breaks a line too (YAML 1.2, 5.4)
                    int lines = (viaFile ? new String(bytes, StandardCharsets.ISO_8859_1) : text)
                            .split("\r\n|\r|\n", -1).length;
                    assertThat(te.problems()).as("input %d: %s", i, te.getMessage()).isNotEmpty().allSatisfy(p -> {
                        assertThat(p.source()).isEqualTo(source);
                        assertThat(p.line()).isBetween(0, lines + 1);
                        assertThat(p.message()).isNotBlank();
                        assertThat(p.toString()).startsWith(source + ":");
                        if (p.message().startsWith("YAML syntax")) { // a mistake in the text is somewhere in it
                            assertThat(p.line()).as("%s", p).isPositive();
                        }
                    });
                }
            }
        } finally {
            worker.shutdownNow();
            Files.deleteIfExists(file);
        }
        System.out.printf("topology fuzz: %d inputs in %.1f s: %d loaded, %d refused with problems%n", TRIES,
                (System.nanoTime() - started) / 1e9, loaded, refused);
        assertThat(refused).as("the mutations reach the validation").isPositive();
        assertThat(loaded).as("and some leave a valid topology").isPositive();
    }

    private static String abbreviate(String s) {
        return s.length() > 3000 ? s.substring(0, 3000) + "…" : s;
    }

    // ---- the limits, each on its own ----

    /** The problems of a text that must not load. */
    private static List<ConfigProblem> problems(String yaml) {
        try {
            TopologyLoader.load(yaml, "limits.yaml");
        } catch (TopologyException e) {
            assertThat(e.problems()).isNotEmpty();
            return e.problems();
        }
        throw new AssertionError("loaded");
    }

    @Example
    void nestingBeyondTheLimit_isAProblem_notAStackOverflow() {
        String deep = "gateway_clusters: " + "[".repeat(30_000) + "]".repeat(30_000) + "\n";
        assertThat(problems(deep)).singleElement().satisfies(p -> {
            assertThat(p.message()).isEqualTo("nesting depth above 64 (expected: at most 64 levels of mappings and lists)");
            assertThat(p.line()).isEqualTo(1);
        });
    }

    @Example
    void aliasBomb_isRefusedAtTheAliasThatCrossesTheBound_withoutExpansion() {
        assertThat(problems(BOMB)).singleElement().satisfies(p -> {
            assertThat(p.message()).isEqualTo("alias *f repeats more values than allowed (expected: aliases repeating"
                    + " at most 1000000 values in all)");
            assertThat(p.line()).isEqualTo(7);
            assertThat(p.path()).isEqualTo("g[0]");
        });
    }

    @Example
    void fileBeyondTheLimit_isRefusedBeforeItIsRead() throws IOException {
        Path big = Files.createTempFile("big-topology", ".yaml");
        try {
            try (var out = Files.newOutputStream(big)) {
                byte[] line = "# padding padding padding padding padding padding padding padding padding\n"
                        .getBytes(StandardCharsets.UTF_8);
                for (long n = 0; n <= YamlTree.MAX_DOCUMENT_CHARS / line.length; n++) {
                    out.write(line);
                }
            }
            TopologyException e = org.assertj.core.api.Assertions.catchThrowableOfType(TopologyException.class,
                    () -> TopologyLoader.load(big));
            assertThat(e).isNotNull();
            assertThat(e.getMessage()).startsWith(big.toString() + ": file of ").contains("expected: at most 16777216");
        } finally {
            Files.deleteIfExists(big);
        }
    }
}
