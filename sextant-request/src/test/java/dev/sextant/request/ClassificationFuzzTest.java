package dev.sextant.request;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.RandomGenerator;
import net.jqwik.api.Tuple;

/**
 * Fuzzes the data plane's classification entry points with what a client controls: the body fields and headers that
 * become {@link HttpFields}, as arbitrary strings (blank, huge, control characters, lone surrogates, numbers that
 * overflow, comma lists), through {@link HttpFields#toMeta()}, {@link Keys} and {@link DataPlane#route}.
 *
 * <p>Properties: nothing throws (but an empty or missing model, refused by name: the gateway answers 400 before);
 * the parsed residency is trimmed, without blanks or duplicates; the priority is the header's integer or none; the same fields give the same keys; a routed request goes to an engine that serves its
 * model, inside the regions it named and inside its class's regions; a refusal is a 404, 429 or 503 with a message.
 *
 * <p>Size: {@code -Dsextant.fuzz.tries=N} (default 5,000: about a second on an idle machine), seed
 * {@code -Dsextant.fuzz.seed}.
 */
class ClassificationFuzzTest {
    static final int TRIES = Integer.getInteger("sextant.fuzz.tries", 5_000);
    static final long SEED = Long.getLong("sextant.fuzz.seed", 20261129L);

    record Fields(String model, String residency, String priority, String cacheKey, String session, String user,
                  String prompt, String requestId) {
        HttpFields http() {
            return new HttpFields(model, residency, priority, cacheKey, session, user,
                    prompt == null || prompt.isEmpty() ? null : PromptKey.ofMessages("user", prompt), requestId);
        }
    }

    static Arbitrary<String> text() {
        return Arbitraries.frequencyOf(
                Tuple.of(4, Arbitraries.strings().ofMaxLength(40)),
                Tuple.of(2, Arbitraries.strings().all().ofMaxLength(12)),
                Tuple.of(2, Arbitraries.strings().withChars(" \t\r\n,\u00a0\u2028\ud800\udc00\0").ofMaxLength(8)),
                Tuple.of(1, Arbitraries.integers().between(1000, 5000).map("x"::repeat)),
                Tuple.of(4, Arbitraries.of("", " ", "m", "m2", "M", "m ", "gpt-9", "eu-west", "us-east",
                        "eu-west, us-east", ",,eu-west,,eu-west,", "  us-east  ", "2147483647", "2147483648",
                        "-2147483648", "+3", "0x10", "1e3", "\u0661\u0662", "NaN", "null")));
    }

    static Arbitrary<String> maybe(Arbitrary<String> a) {
        return Arbitraries.frequencyOf(Tuple.of(1, Arbitraries.just((String) null)), Tuple.of(3, a));
    }

    static Arbitrary<Fields> fields() {
        Arbitrary<String> model = Arbitraries.frequencyOf(Tuple.of(4, Arbitraries.of("m", "m2")), Tuple.of(1, text()));
        Arbitrary<String> residency = Arbitraries.frequencyOf(
                Tuple.of(2, Arbitraries.of("eu-west", "us-east", "eu-west,us-east", " us-east , eu-west ")),
                Tuple.of(1, text()), Tuple.of(1, Arbitraries.just((String) null)));
        Arbitrary<String> id = text().filter(s -> !s.isBlank());
        return Combinators.combine(model, residency, maybe(text()), maybe(text()), maybe(text()), maybe(text()),
                maybe(text()), id).as(Fields::new);
    }

    private static Snapshot snapshot() {
        return new Fixtures.SnapshotBuilder("g").rtt("c-eu", 2).rtt("c-us", 20)
                .engine("eu-1", "c-eu", "eu-west", 100, "m")
                .engine("us-1", "c-us", "us-east", 100, "m")
                .engine("us-2", "c-us", "us-east", 100, "m", "m2")
                .route("chat", "m", List.of(), 0, 0, Map.of("eu-1", 0.4, "us-1", 0.3, "us-2", 0.3))
                .route("chat-eu", "m", List.of("eu-west"), 0, 0, Map.of("eu-1", 1.0))
                .route("chat-hi", "m", List.of(), 5, 0.2, Map.of("eu-1", 0.5, "us-2", 0.5))
                .route("m2-us", "m2", List.of("us-east"), 1, 0, Map.of("us-2", 1.0))
                .build();
    }

    @Example
    void arbitraryFields_classifyWithoutThrowing_andRoutesStayInsideTheAllowedSet() {
        Snapshot snapshot = snapshot();
        DataPlane plane = DataPlane.create("g", snapshot, Ticker.system(), DataPlaneOptions.defaults());
        Map<String, EngineState> engines = snapshot.engines();
        Map<String, Route> routes = snapshot.routes().get("g");
        RandomGenerator<Fields> gen = fields().generator(100);
        Random random = new Random(SEED);
        Set<Integer> statuses = new HashSet<>();
        for (int i = 0; i < TRIES; i++) {
            Fields f = gen.next(random).value();
            try {
                check(plane, engines, routes, f, statuses);
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("input " + i + " (seed " + SEED + "): " + f, e);
            }
        }
        assertThat(statuses).as("the run saw routes and refusals").contains(200, 400, 404);
    }

    private static void check(DataPlane plane, Map<String, EngineState> engines, Map<String, Route> routes, Fields f,
                              Set<Integer> statuses) {
        if (f.model() == null || f.model().isEmpty()) {
            // the one precondition (the gateway answers 400 before): refused by name, nothing else thrown
            assertThatThrownBy(() -> f.http().toMeta()).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("model: ");
            return;
        }
        RequestMeta meta = f.http().toMeta();
        assertThat(meta.residency()).doesNotHaveDuplicates().allSatisfy(r -> {
            assertThat(r).isNotBlank();
            assertThat(r).isEqualTo(r.strip());
        });
        if (f.priority() == null || f.priority().isBlank()) {
            assertThat(meta.priority()).isEqualTo(RequestMeta.NO_PRIORITY);
        } else {
            Integer parsed = null;
            try {
                parsed = Integer.parseInt(f.priority().trim());
            } catch (NumberFormatException e) {
                // not an integer: ignored
            }
            assertThat(meta.priority()).isEqualTo(parsed == null ? RequestMeta.NO_PRIORITY : parsed);
        }
        RequestMeta again = f.http().toMeta();
        assertThat(again.affinityKey()).as("keys are stable").isEqualTo(meta.affinityKey());
        assertThat(again.requestId()).isEqualTo(meta.requestId());

        Decision d = plane.route(meta);
        if (d.routed()) {
            statuses.add(200);
            EngineState e = engines.get(d.engineId());
            assertThat(e).as("a known engine").isNotNull();
            assertThat(e.models()).contains(meta.model());
            if (!meta.residency().isEmpty()) {
                assertThat(meta.residency()).as("inside the regions the request named").contains(e.region());
            }
            Route r = routes.get(d.classId());
            assertThat(r.model()).isEqualTo(meta.model());
            if (!r.residency().isEmpty()) {
                assertThat(r.residency()).as("inside the class's regions").contains(e.region());
            }
            plane.onFinish(d, Outcome.SUCCESS, 1_000_000);
        } else {
            statuses.add(d.refusal().status());
            assertThat(d.refusal().status()).isIn(400, 404, 429, 503);
            assertThat(d.message()).isNotBlank();
        }
    }
}
