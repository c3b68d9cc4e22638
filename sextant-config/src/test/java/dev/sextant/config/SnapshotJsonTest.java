package dev.sextant.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sextant.snapshot.EngineGroup;
import dev.sextant.snapshot.EngineState;
import dev.sextant.snapshot.Objective;
import dev.sextant.snapshot.RetryBudget;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.SlotTable;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.PriorityScheduling;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SnapshotJsonTest {

    static EngineState engine(String cluster, double load, double latency) {
        return new EngineState(cluster, "us-" + cluster, "http://" + cluster + ":9101", List.of("m"), load, 100, 90,
                load / 100, latency, 2 * latency, 0, 1);
    }

    /** The talk example's shape: two gateways, two engines. */
    static Snapshot sample(double eastLatency, double price) {
        Map<String, Map<String, Route>> routes = new LinkedHashMap<>();
        routes.put("west", Map.of("chat", new Route("m", List.of(), 0, 40, Map.of("west-1", 1.0), 0, 4000)));
        routes.put("east", Map.of("chat", new Route("m", List.of("us-east", "us-west"), 2, 120,
                Map.of("west-1", 0.25, "east-1", 0.75), 0, price)));
        Map<String, EngineState> engines = new LinkedHashMap<>();
        engines.put("west-1", engine("gpu-west", 70, 5000));
        engines.put("east-1", engine("gpu-east", 90, eastLatency));
        return new Snapshot(3, "abc", "optimal", 0.89, RetryBudget.DEFAULT, routes, engines,
                Map.of("east", Map.of("gpu-east", 2.0, "gpu-west", 60.0)),
                new Objective(5123.5, 800000, 799999, 1.25e-6, 0, 12));
    }

    @Test
    void write_sample_usesSnakeCaseNamesAtDocumentedPaths() throws Exception {
        JsonNode json = new ObjectMapper().readTree(SnapshotJson.write(sample(5200, 4100)));

        assertThat(json.at("/routes/east/chat/weights/east-1").asDouble()).isEqualTo(0.75);
        assertThat(json.at("/routes/east/chat/shed_fraction").isNumber()).isTrue();
        assertThat(json.at("/routes/east/chat/price_ms").asDouble()).isEqualTo(4100);
        assertThat(json.at("/routes/east/chat/demand_rps").asDouble()).isEqualTo(120);
        assertThat(json.at("/engines/east-1/load_rps").asDouble()).isEqualTo(90);
        assertThat(json.at("/engines/east-1/effective_capacity_rps").asDouble()).isEqualTo(90);
        assertThat(json.at("/engines/east-1/shadow_price_ms").isNumber()).isTrue();
        assertThat(json.at("/objective/mean_latency_ms").asDouble()).isEqualTo(5123.5);
        assertThat(json.at("/objective/gap_relative").asDouble()).isEqualTo(1.25e-6);
        assertThat(json.at("/retry_budget/min_retries_per_second").asDouble()).isEqualTo(1.0);
        assertThat(json.at("/network_rtt_ms/east/gpu-west").asDouble()).isEqualTo(60);
        assertThat(json.at("/fleet_utilization").asDouble()).isEqualTo(0.89);
        assertThat(json.at("/version").asLong()).isEqualTo(3);
    }

    @Test
    void write_sample_startsWithVersionAndSortsMapKeys() {
        String text = SnapshotJson.write(sample(5200, 4100));

        assertThat(text).startsWith("{\n  \"version\" : 3,\n  \"hash\" : \"abc\",\n  \"policy\" : \"optimal\",\n")
                .endsWith("}\n")
                .doesNotContain("\r");
        assertThat(text.indexOf("\"east-1\" : 0.75")).isLessThan(text.indexOf("\"west-1\" : 0.25"));
        assertThat(text.indexOf("\"east\" : {")).isLessThan(text.indexOf("\"west\" : {"));
    }

    @Test
    void write_equalSnapshotsBuiltInOtherOrder_areByteIdentical() {
        Snapshot a = sample(5200, 4100);
        Map<String, EngineState> reversed = new LinkedHashMap<>();
        reversed.put("east-1", a.engines().get("east-1"));
        reversed.put("west-1", a.engines().get("west-1"));
        Snapshot b = new Snapshot(a.version(), a.hash(), a.policy(), a.fleetUtilization(), a.retryBudget(),
                new LinkedHashMap<>(a.routes()), reversed, a.networkRttMs(), a.objective());

        assertThat(SnapshotJson.write(b)).isEqualTo(SnapshotJson.write(a));
    }

    @Test
    void write_nonFiniteNumbers_areNullAndReadBackAsNaN() throws SnapshotException {
        String text = SnapshotJson.write(sample(Double.POSITIVE_INFINITY, Double.NaN));

        assertThat(text).contains("\"latency_ms\" : null").contains("\"price_ms\" : null")
                .doesNotContain("Infinity").doesNotContain("NaN");
        Snapshot back = SnapshotJson.read(text);
        assertThat(back.engines().get("east-1").latencyMs()).isNaN();
        assertThat(back.route("east", "chat").priceMs()).isNaN();
    }

    @Test
    void read_sample_roundTrips() throws SnapshotException {
        Snapshot s = sample(5200, 4100);

        assertThat(SnapshotJson.read(SnapshotJson.write(s))).isEqualTo(s);
    }

    @Test
    void priorityScheduling_isWrittenOnlyWhenAnEngineHasIt_andAnEngineWithoutItHashesAsBefore() throws Exception {
        Snapshot plain = sample(5200, 4100).sealed(3);
        EngineState e = plain.engines().get("east-1");
        Snapshot withIt = withEastOne(plain, new EngineState(e.cluster(), e.region(), e.endpoint(), e.models(),
                e.loadRps(), e.capacityRps(), e.effectiveCapacityRps(), e.utilization(), e.latencyMs(),
                e.marginalCostMs(), e.shadowPriceMs(), e.penalty(), PriorityScheduling.LOWER_FIRST));

        String json = SnapshotJson.write(withIt);
        JsonNode tree = new ObjectMapper().readTree(json);
        assertThat(tree.at("/engines/east-1/priority_scheduling").asText()).isEqualTo("lower_first");
        assertThat(tree.at("/engines/west-1").has("priority_scheduling")).isFalse();
        assertThat(SnapshotJson.write(plain)).doesNotContain("priority_scheduling");
        assertThat(SnapshotJson.read(json)).isEqualTo(withIt);
        assertThat(withIt.hash()).isNotEqualTo(plain.hash()); // a gateway must see the change
        Snapshot noneWritten = SnapshotJson.read(SnapshotJson.write(plain));
        assertThat(noneWritten.contentHash()).isEqualTo(plain.hash());
        SnapshotException bad = catchThrowableOfType(SnapshotException.class,
                () -> SnapshotJson.read(json.replace("\"lower_first\"", "\"fifo\"")));
        assertThat(bad.getMessage()).contains("engines.east-1.priority_scheduling");
    }

    @Test
    void batchPlaces_areWrittenOnlyWhenTheyAreKnown_andSnapshotsWithoutThemHashAsBefore() throws Exception {
        Snapshot plain = sample(5200, 4100).sealed(3);
        EngineState e = plain.engines().get("east-1");
        Snapshot withThem = withEastOne(plain, new EngineState(e.cluster(), e.region(), e.endpoint(), e.models(),
                e.loadRps(), e.capacityRps(), e.effectiveCapacityRps(), e.utilization(), e.latencyMs(),
                e.marginalCostMs(), e.shadowPriceMs(), e.penalty(), e.priorityScheduling(), 48));

        writtenOnlyWhereKnown(plain, withThem, "batch_places", 48, EngineState::batchPlaces);
    }

    /**
     * {@code withIt} ({@code plain} with east-1's {@code field} set to {@code value}) writes it for east-1 alone, reads
     * it back NaN for the others, and hashes apart; {@code plain} writes no such field and hashes as before.
     */
    private static void writtenOnlyWhereKnown(Snapshot plain, Snapshot withIt, String field, double value,
                                              java.util.function.ToDoubleFunction<EngineState> get) throws Exception {
        String json = SnapshotJson.write(withIt);
        JsonNode tree = new ObjectMapper().readTree(json);
        assertThat(tree.at("/engines/east-1/" + field).asDouble()).isEqualTo(value);
        assertThat(tree.at("/engines/west-1").has(field)).isFalse();
        assertThat(SnapshotJson.write(plain)).doesNotContain(field);
        assertThat(SnapshotJson.read(json)).isEqualTo(withIt);
        assertThat(get.applyAsDouble(SnapshotJson.read(json).engines().get("west-1"))).isNaN();
        assertThat(withIt.hash()).isNotEqualTo(plain.hash()); // a gateway must see the change
        assertThat(SnapshotJson.read(SnapshotJson.write(plain)).contentHash()).isEqualTo(plain.hash());
        assertThat(SnapshotJson.read(json).contentHash()).isEqualTo(withIt.hash());
    }

    @Test
    void contextKeptSeconds_areWrittenOnlyWhenKnown_andSnapshotsWithoutThemHashAsBefore() throws Exception {
        Snapshot plain = sample(5200, 4100).sealed(3);
        Snapshot withThem = withEastOne(plain, plain.engines().get("east-1").withContextKeptSeconds(12.5));

        writtenOnlyWhereKnown(plain, withThem, "context_kept_seconds", 12.5, EngineState::contextKeptSeconds);
        assertThat(plain.engines().get("east-1").withContextKeptSeconds(Double.POSITIVE_INFINITY).contextKeptSeconds())
                .as("a cache that keeps every context is written as one whose keeping time is unknown").isNaN();
        String json = SnapshotJson.write(withThem);
        SnapshotException bad = catchThrowableOfType(SnapshotException.class,
                () -> SnapshotJson.read(json.replace("12.5", "-12.5")));
        assertThat(bad.getMessage()).contains("engines.east-1.context_kept_seconds").contains("-12.5")
                .contains("expected: a number of seconds >= 0");
    }

    /** {@code plain} with engine east-1's state replaced by {@code eastOne}, sealed as version 3. */
    private static Snapshot withEastOne(Snapshot plain, EngineState eastOne) {
        Map<String, EngineState> engines = new LinkedHashMap<>(plain.engines());
        engines.put("east-1", eastOne);
        return plain.withEngines(engines);
    }

    @Test
    void read_file_roundTripsAndNamesFileInErrors(@TempDir Path dir) throws Exception {
        Path good = dir.resolve("snap.json");
        Files.writeString(good, SnapshotJson.write(sample(5200, 4100)));
        Path bad = dir.resolve("bad.json");
        Files.writeString(bad, "{\n  \"version\": 1,\n  \"hash\": \n");

        assertThat(SnapshotJson.read(good)).isEqualTo(sample(5200, 4100));
        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(bad));
        assertThat(e.getMessage()).startsWith(bad + ":");
    }

    @Test
    void read_fileBeyondTheLimit_isRefusedNamingIt(@TempDir Path dir) throws Exception {
        Path big = dir.resolve("big.json");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(big.toFile(), "rw")) {
            f.setLength(SnapshotJson.MAX_FILE_BYTES + 1L); // sparse: no disk used
        }

        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(big));
        assertThat(e.getMessage()).isEqualTo(big + ": file of 268435457 bytes (expected: at most 268435456)");
    }

    /**
     * A route weighting an engine the snapshot does not list (a hand-edited snapshot file, a producer's bug) is refused
     * at the weight's line: a gateway has no address for it and dropped its weight, three quarters of east's traffic,
     * without a word.
     */
    @Test
    void read_aWeightOnAnEngineTheSnapshotLacks_isRefusedAtItsLine() throws Exception {
        com.fasterxml.jackson.databind.node.ObjectNode tree = (com.fasterxml.jackson.databind.node.ObjectNode)
                Json.MAPPER.readTree(SnapshotJson.write(sample(5200, 4100)));
        ((com.fasterxml.jackson.databind.node.ObjectNode) tree.get("engines")).remove("east-1");
        String text = Json.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(tree);

        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(text, "snap.json"));

        assertThat(e.problems()).singleElement().satisfies(p -> {
            assertThat(p.path()).isEqualTo("routes.east.chat.weights.east-1");
            assertThat(p.message()).isEqualTo("not an engine of the snapshot (expected: a key of engines)");
            assertThat(text.lines().toList().get(p.line() - 1)).contains("\"east-1\"");
        });
    }

    @Test
    void read_syntaxError_namesLine() {
        String text = SnapshotJson.write(sample(5200, 4100)).replaceFirst("\"policy\" : \"optimal\",", "\"policy\" : optimal,");

        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(text, "snap.json"));

        assertThat(e.problems()).singleElement().satisfies(p -> {
            assertThat(p.line()).isEqualTo(4);
            assertThat(p.message()).startsWith("JSON syntax: ");
        });
    }

    @Test
    void read_unclosedObject_namesTheLineItOpenedOn_withoutJacksonsHiddenSource() {
        SnapshotException e = catchThrowableOfType(SnapshotException.class,
                () -> SnapshotJson.read("{\n  \"version\": 3", "snap.json"));
        assertThat(e.getMessage()).startsWith("snap.json:2: JSON syntax: Unexpected end-of-input")
                .endsWith("(opened on line 1)").doesNotContain("Source").doesNotContain("REDACTED");
    }

    @Test
    void read_emptyText_saysEmpty_notWrongType() {
        for (String text : new String[] {"", " \n"}) {
            SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(text, "snap.json"));
            assertThat(e.getMessage()).isEqualTo("snap.json:1: empty (expected: a snapshot object)");
        }
    }

    @Test
    void read_wrongType_namesLineAndField() {
        String text = SnapshotJson.write(sample(5200, 4100)).replace("\"load_rps\" : 90.0", "\"load_rps\" : \"lots\"");
        int line = lineOf(text, "\"lots\"");

        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(text, "snap.json"));

        assertThat(e.getMessage()).startsWith("snap.json:" + line + ": engines.east-1.load_rps: 'lots' (expected: a number)");
    }

    @Test
    void read_unknownField_namesFieldAndAllowedOnes() {
        String text = SnapshotJson.write(sample(5200, 4100)).replace("\"shed_rps\"", "\"shed\" : 1,\n    \"shed_rps\"");

        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(text, "snap.json"));

        assertThat(e.problems()).singleElement().satisfies(p -> {
            assertThat(p.line()).isEqualTo(lineOf(text, "\"shed\""));
            assertThat(p.path()).isEqualTo("objective.shed");
            assertThat(p.message()).startsWith("unknown key 'shed' (expected one of: ").contains("shed_rps");
        });
    }

    @Test
    void read_routeWithSlotTable_roundTripsAndNamesAMissingTable() throws SnapshotException {
        Snapshot base = sample(5200, 4100);
        Route r = base.route("east", "chat");
        String slots = SlotTable.of(r.slotEngines(), r.slotWeights()).encode();
        Route withTable = new Route(r.model(), r.residency(), r.priority(), r.demandRps(), r.weights(),
                r.shedFraction(), r.priceMs(), slots);
        Snapshot s = new Snapshot(3, "", "optimal", base.fleetUtilization(), base.retryBudget(),
                Map.of("east", Map.of("chat", withTable)), base.engines(), base.networkRttMs(), base.objective());

        String text = SnapshotJson.write(s);
        assertThat(text).contains("\"slots\" : \"" + slots + "\"");
        assertThat(SnapshotJson.read(text)).isEqualTo(s);
        assertThat(s.contentHash()).isNotEqualTo(new Snapshot(3, "", "optimal", base.fleetUtilization(),
                base.retryBudget(), Map.of("east", Map.of("chat", r)), base.engines(), base.networkRttMs(),
                base.objective()).contentHash());

        SnapshotException e = catchThrowableOfType(SnapshotException.class,
                () -> SnapshotJson.read(text.replace(",\n        \"slots\" : \"" + slots + "\"", ""), "snap.json"));
        assertThat(e.problems()).singleElement().satisfies(p -> {
            assertThat(p.path()).isEqualTo("routes.east.chat.slots");
            assertThat(p.message()).startsWith("missing");
        });
    }

    /** A snapshot whose route east/chat is weighted over two engine groups, as the optimal policy writes them. */
    static Snapshot grouped() {
        Map<String, Double> a = new java.util.TreeMap<>(Map.of("a1", 0.6, "a2", 0.4));
        Map<String, Double> b = new java.util.TreeMap<>(Map.of("b1", 1.0));
        Map<String, EngineGroup> groups = Map.of(
                "A|m", new EngineGroup(a, SlotTable.of(List.of("a1", "a2"), new double[] {0.6, 0.4}).encode()),
                "B|m", new EngineGroup(b, SlotTable.of(List.of("b1"), new double[] {1.0}).encode()));
        Route r = Route.grouped("m", List.of(), 0, 50, new String[] {"A|m", "B|m"}, new double[] {0.75, 0.25},
                new EngineGroup[] {groups.get("A|m"), groups.get("B|m")}, 0, 12.5,
                SlotTable.of(List.of("A|m", "B|m"), new double[] {0.75, 0.25}).encode());
        Map<String, EngineState> engines = new java.util.TreeMap<>();
        for (String id : List.of("a1", "a2", "b1")) {
            engines.put(id, engine(id.startsWith("a") ? "A" : "B", 10, 100));
        }
        return new Snapshot(4, "", "optimal", 0.5, RetryBudget.DEFAULT, Map.of("east", Map.of("chat", r)), engines,
                Map.of("east", Map.of("A", 2.0, "B", 30.0)), new Objective(100, 5000, 4999.9, 2e-5, 0, 7), groups)
                .sealed(4);
    }

    @Test
    void read_groupedRoutes_roundTripWithTheirGroups_andFlatOnesWriteNone() throws SnapshotException {
        Snapshot s = grouped();
        String text = SnapshotJson.write(s);
        assertThat(text).contains("\"groups\" : {\n          \"A|m\" : 0.75,")
                .contains("\"weights\" : {\n          \"a1\" : " + 0.75 * 0.6);
        Snapshot back = SnapshotJson.read(text);
        assertThat(back).isEqualTo(s);
        assertThat(back.contentHash()).isEqualTo(s.hash());
        assertThat(SnapshotJson.write(sample(5200, 4100))).doesNotContain("groups");
    }

    @Test
    void read_groupedRouteWhoseWeightIsNotItsGroupsFractionTimesShare_namesLineAndField() {
        String text = SnapshotJson.write(grouped()).replace("\"b1\" : 0.25", "\"b1\" : 0.3");
        int line = text.substring(0, text.indexOf("\"b1\" : 0.3")).split("\n", -1).length;

        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(text, "snap.json"));

        assertThat(e.problems()).singleElement().satisfies(p -> {
            assertThat(p.line()).isEqualTo(line);
            assertThat(p.path()).isEqualTo("routes.east.chat.weights.b1");
            assertThat(p.message()).isEqualTo("0.3 (expected: 0.25, its group's fraction times its share of the group)");
        });
    }

    @Test
    void read_missingField_namesField() {
        String text = SnapshotJson.write(sample(5200, 4100)).replace("  \"fleet_utilization\" : 0.89,\n", "");

        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(text, "snap.json"));

        assertThat(e.problems()).singleElement().satisfies(p -> {
            assertThat(p.path()).isEqualTo("fleet_utilization");
            assertThat(p.message()).startsWith("missing");
        });
    }

    /**
     * A field that is null, of the wrong kind, or a number JSON does not have is said at its path and line in the
     * snapshot's words: a NullPointerException's text or a Java type's name said nothing to the one who wrote it.
     * Each row: where in the sample's tree ("" for the whole text), what goes there, the line and the problem.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            routes null        | /routes                   | null   | 19 | routes: missing (expected: an object of gateway cluster → class → route)
            engines null       | /engines                  | null   | 53 | engines: missing (expected: an object of engine id → engine)
            round trips null   | /network_rtt_ms           | null   | 87 | network_rtt_ms: missing (expected: an object of gateway cluster → engine cluster → ms)
            a gateway null     | /routes/east              | null   | 20 | routes.east: missing (expected: an object of class → route)
            a route null       | /routes/east/chat         | null   | 21 | routes.east.chat: missing (expected: a route object)
            weights null       | /routes/east/chat/weights | null   | 29 | routes.east.chat.weights: missing (expected: an object of engine id → weight)
            model null         | /routes/east/chat/model   | null   | 22 | routes.east.chat.model: missing (expected: a model id)
            endpoint null      | /engines/east-1/endpoint  | null   | 57 | engines.east-1.endpoint: missing (expected: the engine's base URL)
            a curve point null | /retry_budget/curve       | [null] |  7 | retry_budget.curve[0]: missing (expected: a point {utilization, ratio})
            routes a list      | /routes                   | []     | 19 | routes: a list (expected: an object)
            retry budget list  | /retry_budget             | []     |  6 | retry_budget: a list (expected: an object)
            objective a string | /objective                | "x"    | 93 | objective: 'x' (expected: an object)
            the whole a list   | ''                        | []     |  1 | a list (expected: a snapshot object)
            NaN                | /fleet_utilization        | NaN    |  5 | fleet_utilization: NaN is not a number in JSON (expected: a finite number)
            Infinity           | /routes/east/chat/weights/east-1 | Infinity | 30 | routes.east.chat.weights.east-1: Infinity is not a number in JSON (expected: a finite number)
            """)
    void read_fieldNullOfTheWrongKindOrNoJsonNumber_isSaidAtItsPathInTheSnapshotsWords(String name, String pointer,
            String value, int line, String problem) throws Exception {
        JsonNode tree = new ObjectMapper().readTree(SnapshotJson.write(sample(5200, 4100)));
        String marker = "\"@value@\"";
        if (!pointer.isEmpty()) {
            JsonNode parent = tree.at(pointer.substring(0, pointer.lastIndexOf('/')));
            ((com.fasterxml.jackson.databind.node.ObjectNode) parent).put(pointer.substring(pointer.lastIndexOf('/') + 1),
                    "@value@");
        }
        String text = pointer.isEmpty() ? value : Json.write(tree).replace(marker, value);
        assertThat(text).as(name).doesNotContain(marker);

        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(text, "snap.json"));

        assertThat(e).as(name).isNotNull();
        assertThat(e.getMessage()).as(name).isEqualTo("snap.json:" + line + ": " + problem);
    }

    @Test
    void read_valueOutOfRange_givesRecordsMessage() {
        String text = SnapshotJson.write(sample(5200, 4100)).replaceFirst("\"shed_fraction\" : 0.0", "\"shed_fraction\" : 2.0");

        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(text, "snap.json"));

        assertThat(e.getMessage()).contains("shed_fraction: 2.0 (expected: in [0, 1])").startsWith("snap.json:");
    }

    /** {@link #sample} with each route's allowed utilization: east's engines 0.95 used, west's 0.4. */
    static Snapshot withAllowedUtilizations() {
        Snapshot base = sample(5200, 4100);
        Map<String, Map<String, Route>> routes = new LinkedHashMap<>();
        base.routes().forEach((g, byClass) -> byClass.forEach((c, r) -> routes.put(g, Map.of(c, new Route(r.model(),
                r.residency(), r.priority(), r.demandRps(), r.weights(), r.shedFraction(), r.priceMs(), r.slots(),
                r.groups(), g.equals("east") ? 0.95 : 0.4)))));
        return new Snapshot(3, "", base.policy(), base.fleetUtilization(), base.retryBudget(), routes, base.engines(),
                base.networkRttMs(), base.objective()).sealed(3);
    }

    @Test
    void write_allowedUtilization_isWrittenPerRoute_andReadsBackWithTheSameHash() throws Exception {
        Snapshot s = withAllowedUtilizations();
        String text = SnapshotJson.write(s);
        JsonNode json = new ObjectMapper().readTree(text);

        assertThat(json.at("/routes/east/chat/allowed_utilization").asDouble()).isEqualTo(0.95);
        assertThat(json.at("/routes/west/chat/allowed_utilization").asDouble()).isEqualTo(0.4);
        Snapshot back = SnapshotJson.read(text);
        assertThat(back).isEqualTo(s);
        assertThat(back.contentHash()).isEqualTo(s.hash());
        assertThat(back.retryRatio(back.route("east", "chat"))).isCloseTo(0.01, within(1e-12));
        assertThat(back.retryRatio(back.route("west", "chat"))).isEqualTo(0.2);
    }

    /**
     * A snapshot from a producer that predates allowed_utilization: it reads (the routes' retry budgets then follow
     * fleet_utilization), its hash still checks, and it writes back the very text it was read from.
     */
    @Test
    void read_routesWithoutAllowedUtilization_fallBackToTheFleet_andKeepTheirHashAndText() throws SnapshotException {
        Snapshot old = sample(5200, 4100).sealed(3);
        String text = SnapshotJson.write(old);
        assertThat(text).doesNotContain("allowed_utilization");

        Snapshot back = SnapshotJson.read(text);
        Route east = back.route("east", "chat");
        assertThat(east.allowedUtilization()).isNaN();
        assertThat(back.allowedUtilizationOf(east)).isEqualTo(0.89);
        assertThat(back.contentHash()).isEqualTo(old.hash());
        assertThat(SnapshotJson.write(back)).isEqualTo(text);
        assertThat(SnapshotJson.read(text.replace("\"demand_rps\" : 120.0,",
                "\"allowed_utilization\" : null,\n        \"demand_rps\" : 120.0,"))).isEqualTo(back);
    }

    @Test
    void read_negativeAllowedUtilization_givesTheRecordsMessage() {
        String text = SnapshotJson.write(withAllowedUtilizations()).replace("\"allowed_utilization\" : 0.95",
                "\"allowed_utilization\" : -0.95");

        SnapshotException e = catchThrowableOfType(SnapshotException.class, () -> SnapshotJson.read(text, "snap.json"));

        assertThat(e.getMessage()).startsWith("snap.json:")
                .contains("allowed_utilization: -0.95 (expected: a finite number >= 0, or absent)");
    }

    @Provide
    Arbitrary<Snapshot> snapshots() {
        Arbitrary<Double> finite = Arbitraries.doubles().between(-1e9, 1e9).ofScale(6)
                .edgeCases(c -> c.add(0.0).add(1e-300));
        Arbitrary<Double> fraction = Arbitraries.doubles().between(0, 1);
        return Combinators.combine(Arbitraries.longs().between(0, Long.MAX_VALUE), finite, finite, fraction, fraction,
                        Arbitraries.strings().alpha().numeric().withChars('-', '.', 'é').ofMinLength(1).ofMaxLength(8),
                        Arbitraries.integers().between(-5, 5))
                .as((version, a, b, w, shed, id, priority) -> new Snapshot(version, id, "optimal", w,
                        new RetryBudget(List.of(new RetryBudget.Point(0.1, shed)), a >= 0 ? a : -a),
                        Map.of(id, Map.of("k", new Route("m", List.of(id), priority, b, Map.of(id, w), shed, a, "",
                                Map.of(), priority % 2 == 0 ? Double.NaN : w * 3))),
                        Map.of(id, new EngineState(id, "r", "http://x", List.of("m"), a, b, w, shed, a, b, w, shed)),
                        Map.of(id, Map.of(id, b)), new Objective(a, b, a, b, w, priority)));
    }

    @Property(tries = 200)
    void read_ofWrite_isIdentityForFiniteSnapshots(@ForAll("snapshots") Snapshot s) throws SnapshotException {
        assertThat(SnapshotJson.read(SnapshotJson.write(s))).isEqualTo(s);
    }

    private static int lineOf(String text, String needle) {
        return text.substring(0, text.indexOf(needle)).split("\n", -1).length;
    }
}
