package dev.sextant.snapshot;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import dev.sextant.topology.PriorityScheduling;

/**
 * The immutable, versioned routing policy the control plane publishes: for every (gateway cluster,
 * class) a weighted list of engines and a shed fraction, plus what the data plane needs to apply it
 * (engine endpoints, network latencies for the fallback policy, the retry budget curve) and the
 * numbers behind each weight. All maps are sorted by key, so equal snapshots print equal JSON. They are
 * copied into unmodifiable sorted maps, except maps that already are unmodifiable sorted views in natural
 * order (another snapshot's, as {@link #sealed} passes them, or a policy's that built them so), which are
 * taken as they are: whoever makes such a view must not change the map behind it.
 *
 * @param version          monotone per publisher, ≥ 0
 * @param hash             hex SHA-256 of the content (everything but {@code version} and {@code hash}),
 *                         see {@link #contentHash()}; empty while being built
 * @param policy           the policy that produced it: {@code optimal}, {@code nearest}, …
 * @param fleetUtilization Σ load / Σ effective capacity over all engines, ≥ 0; the retry budgets' utilization for
 *                         routes without their own ({@link #allowedUtilizationOf})
 * @param retryBudget      retry budget parameters for the gateways
 * @param routes           gateway cluster id → class id → route
 * @param engines          engine id → state
 * @param networkRttMs     gateway cluster id → engine cluster id → round trip ms
 * @param objective        cost, certificate and solver statistics
 * @param groups           engine group id → the group's engines, shares and slot table, for the routes weighted
 *                         over groups ({@link Route#groups()}); empty when no route is
 */
public record Snapshot(long version, String hash, String policy, double fleetUtilization, RetryBudget retryBudget,
                       Map<String, Map<String, Route>> routes, Map<String, EngineState> engines,
                       Map<String, Map<String, Double>> networkRttMs, Objective objective,
                       Map<String, EngineGroup> groups) {

    /** A snapshot whose routes are all weighted engine by engine. */
    public Snapshot(long version, String hash, String policy, double fleetUtilization, RetryBudget retryBudget,
                    Map<String, Map<String, Route>> routes, Map<String, EngineState> engines,
                    Map<String, Map<String, Double>> networkRttMs, Objective objective) {
        this(version, hash, policy, fleetUtilization, retryBudget, routes, engines, networkRttMs, objective, Map.of());
    }

    public Snapshot {
        if (version < 0) {
            throw new IllegalArgumentException("version: " + version + " (expected: >= 0)");
        }
        hash = hash == null ? "" : hash;
        groups = groups == null ? Map.of()
                : sorted(Present.values(groups, "groups", "an object of group id → group", "an engine group object"));
        Present.values(routes, "routes", "an object of gateway cluster → class → route",
                "an object of class → route").forEach((g, byClass) -> Present.values(byClass, "routes." + g,
                "an object of class → route", "a route object"));
        routes = grouped(nested(routes), groups);
        engines = sorted(Present.values(engines, "engines", "an object of engine id → engine", "an engine object"));
        networkRttMs = nested(Present.values(networkRttMs, "network_rtt_ms",
                "an object of gateway cluster → engine cluster → ms", "an object of engine cluster → ms"));
        Present.present(retryBudget, "retry_budget", "a retry budget object");
        Present.present(objective, "objective", "an objective object");
    }

    /**
     * {@code routes} with every grouped route's weights checked against {@code groups} (each engine's weight is
     * its group's fraction times its share there, exactly, as a producer computes and JSON carries it) and held
     * as that product, so that equal snapshots compare and hash alike however they were made.
     */
    private static SortedMap<String, Map<String, Route>> grouped(SortedMap<String, Map<String, Route>> routes,
                                                                 Map<String, EngineGroup> groups) {
        // routes a policy built over these very groups need no copy; the weights remember the groups they were
        // found built over, so the same snapshot sealed (its very maps passed again) costs one look per route
        Map<EngineGroup, String> idOf = null;
        boolean asBuilt = true;
        for (Map<String, Route> byClass : routes.values()) {
            for (Route r : byClass.values()) {
                if (!asBuilt || !r.hasGroups()) {
                    continue;
                }
                if (!(r.weights() instanceof GroupedWeights gw)) {
                    asBuilt = false;
                } else if (!gw.foundBuiltOver(groups)) {
                    idOf = idOf == null ? idsByGroup(groups) : idOf;
                    asBuilt = gw.builtOver(idOf);
                    if (asBuilt) {
                        gw.checkedOver = groups;
                    }
                }
            }
        }
        if (asBuilt) {
            return routes;
        }
        TreeMap<String, Map<String, Route>> out = new TreeMap<>();
        routes.forEach((g, byClass) -> {
            TreeMap<String, Route> row = new TreeMap<>();
            byClass.forEach((c, r) -> row.put(c, r.hasGroups() ? checkedGroups("routes." + g + "." + c, r, groups) : r));
            out.put(g, Collections.unmodifiableSortedMap(row));
        });
        return Collections.unmodifiableSortedMap(out);
    }

    /** Each group by identity → its id: a group object a policy shares between routes is found without hashing text. */
    private static Map<EngineGroup, String> idsByGroup(Map<String, EngineGroup> groups) {
        Map<EngineGroup, String> idOf = new IdentityHashMap<>(groups.size() * 2);
        groups.forEach((id, g) -> idOf.put(g, id));
        return idOf;
    }

    private static Route checkedGroups(String field, Route r, Map<String, EngineGroup> groups) {
        String[] ids = new String[r.groups().size()];
        double[] fractions = new double[ids.length];
        EngineGroup[] members = new EngineGroup[ids.length];
        int i = 0;
        for (Map.Entry<String, Double> e : r.groups().entrySet()) {
            EngineGroup group = groups.get(e.getKey());
            if (group == null) {
                throw new IllegalArgumentException(field + ".groups." + e.getKey()
                        + ": unknown group (expected: a key of groups)");
            }
            ids[i] = e.getKey();
            fractions[i] = e.getValue();
            members[i++] = group;
        }
        Map<String, String> groupOf = new HashMap<>();
        for (int a = 0; a < members.length; a++) {
            for (String engine : members[a].shares().keySet()) {
                String other = groupOf.put(engine, ids[a]);
                if (other != null) {
                    throw new IllegalArgumentException(field + ".groups: engine " + engine + " is in groups " + other
                            + " and " + ids[a] + " (expected: each engine in one group)");
                }
            }
        }
        GroupedWeights expected = new GroupedWeights(ids, fractions, members);
        // the route is kept only if its groups are this snapshot's very objects (the hash finds them by identity)
        if (r.weights() instanceof GroupedWeights given && given.sameAs(expected)) {
            boolean same = true;
            for (int a = 0; a < members.length; a++) {
                same &= given.groups[a] == members[a];
            }
            if (same) {
                return r;
            }
        } else if (!expected.equals(r.weights())) {
            expected.forEach((engine, w) -> {
                Double was = r.weights().get(engine);
                if (was == null || Double.compare(was, w) != 0) {
                    throw new IllegalArgumentException(field + ".weights." + engine + ": " + was + " (expected: "
                            + w + ", its group's fraction times its share of the group)");
                }
            });
            for (String engine : r.weights().keySet()) {
                if (!expected.containsKey(engine)) {
                    throw new IllegalArgumentException(field + ".weights." + engine
                            + ": not in any of the route's groups (expected: only their engines)");
                }
            }
        }
        return new Route(r.model(), r.residency(), r.priority(), r.demandRps(), expected, r.shedFraction(),
                r.priceMs(), r.slots(), r.groups(), r.allowedUtilization());
    }

    /** The class of the maps {@link #nested} makes: a snapshot made from another's maps takes them as they are. */
    private static final Class<?> SORTED_VIEW = Collections.unmodifiableSortedMap(new TreeMap<>()).getClass();

    /** {@code m} as an unmodifiable sorted map: a copy, unless it is one already (see the class comment). */
    @SuppressWarnings("unchecked")
    private static <V> SortedMap<String, V> sorted(Map<String, V> m) {
        return isSortedView(m) ? (SortedMap<String, V>) m : Collections.unmodifiableSortedMap(new TreeMap<>(m));
    }

    private static boolean isSortedView(Map<String, ?> m) {
        return m.getClass() == SORTED_VIEW && ((SortedMap<String, ?>) m).comparator() == null;
    }

    @SuppressWarnings("unchecked")
    private static <V> SortedMap<String, Map<String, V>> nested(Map<String, Map<String, V>> m) {
        if (isSortedView(m) && m.values().stream().allMatch(Snapshot::isSortedView)) {
            return (SortedMap<String, Map<String, V>>) m;
        }
        TreeMap<String, Map<String, V>> out = new TreeMap<>();
        m.forEach((k, v) -> out.put(k, sorted(v)));
        return Collections.unmodifiableSortedMap(out);
    }

    /**
     * Hex SHA-256 of everything but {@code version} and {@code hash}: two snapshots with the same
     * routes, engines and numbers have the same content hash whatever their versions. Numbers enter
     * by their exact bits and maps in key order, so the hash is as strict as {@link #equals}; a
     * route's weight names its engine by the engine's position in {@code engines} (its id when the
     * snapshot has no such engine), so a route's weights hash alike however the map holds them.
     */
    public String contentHash() {
        return contentHash(new Hasher());
    }

    /** {@link #contentHash()}, computed by {@code hasher}: the same text, sooner for a series of snapshots. */
    public String contentHash(Hasher hasher) {
        try {
            Feed f = new Feed(MessageDigest.getInstance("SHA-256"));
            f.text(policy).number(fleetUtilization);
            f.number(retryBudget.minRetriesPerSecond()).count(retryBudget.curve().size());
            for (RetryBudget.Point p : retryBudget.curve()) {
                f.number(p.utilization()).number(p.ratio());
            }
            // a weight names its engine by the engine's index in `engines` (fed below, so the pair is
            // unambiguous): a large fleet's snapshot has about a million weights, and 4 bytes each
            // instead of the id's length and text halve what the digest reads
            Map<SortedEngineIds, Boolean> alignedWithEngines = new IdentityHashMap<>();
            Map<String, Integer> engineIndex = new HashMap<>(); // filled on first need: a policy's maps are aligned
            // a route's weights or a group's shares: each engine by its index, or by its id if it has none
            java.util.function.Consumer<Map<String, Double>> byEngine = m -> {
                if (m instanceof SortedWeights sw && alignedWithEngines.computeIfAbsent(sw.ids,
                        ids -> ids.sameAs(engines.keySet()))) {
                    f.pairs(sw.rank, sw.value);
                    return;
                }
                if (engineIndex.isEmpty()) {
                    for (String id : engines.keySet()) {
                        engineIndex.put(id, engineIndex.size());
                    }
                }
                m.forEach((e, w) -> {
                    Integer at = engineIndex.get(e);
                    if (at == null) {
                        f.index(-1).text(e); // an engine the snapshot does not describe
                    } else {
                        f.index(at);
                    }
                    f.number(w);
                });
            };
            // a grouped route names a group by its index in `groups`, fed after the engines
            Map<String, Integer> groupIndex = new HashMap<>(groups.size() * 2);
            for (String id : groups.keySet()) {
                groupIndex.put(id, groupIndex.size());
            }
            f.count(routes.size());
            routes.forEach((g, byClass) -> {
                f.text(g).count(byClass.size());
                byClass.forEach((c, r) -> {
                    f.text(c).text(r.model()).count(r.residency().size());
                    r.residency().forEach(f::text);
                    f.count(r.priority()).number(r.demandRps()).number(r.shedFraction()).number(r.priceMs());
                    f.count(r.groups().size());
                    if (r.hasGroups()) {
                        // the weights follow from the fractions and the groups, fed below
                        GroupedWeights gw = (GroupedWeights) r.weights();
                        for (int a = 0; a < gw.groupIds.length; a++) {
                            Integer at = groupIndex.get(gw.groupIds[a]);
                            (at == null ? f.index(-1).text(gw.groupIds[a]) : f.index(at)).number(gw.fractions[a]);
                        }
                        f.text(r.slots());
                        return;
                    }
                    f.count(r.weights().size());
                    byEngine.accept(r.weights());
                    f.text(r.slots());
                });
            });
            f.count(engines.size());
            EngineTexts known = hasher.engineTexts;
            EngineTexts[] learnt = {null}; // made at the first engine the last snapshot hashed did not have
            int[] at = {0};
            engines.forEach((id, e) -> {
                int j = at[0]++;
                byte[] texts = known == null ? null : known.of(j, id, e);
                if (texts == null) {
                    texts = EngineTexts.encode(id, e);
                    if (learnt[0] == null) {
                        learnt[0] = EngineTexts.startingFrom(known, j, engines.size());
                    }
                }
                if (learnt[0] != null) {
                    learnt[0].put(j, id, e, texts);
                }
                f.bytes(texts);
                f.number(e.loadRps()).number(e.capacityRps()).number(e.effectiveCapacityRps())
                        .number(e.utilization()).number(e.latencyMs()).number(e.marginalCostMs())
                        .number(e.shadowPriceMs()).number(e.penalty());
            });
            if (learnt[0] != null) {
                hasher.engineTexts = learnt[0];
            }
            f.count(networkRttMs.size());
            networkRttMs.forEach((g, row) -> {
                f.text(g).count(row.size());
                row.forEach((c, ms) -> f.text(c).number(ms));
            });
            f.number(objective.meanLatencyMs()).number(objective.latencyCost()).number(objective.lowerBound())
                    .number(objective.gapRelative()).number(objective.shedRps()).count(objective.iterations());
            f.count(groups.size());
            groups.forEach((id, g) -> {
                f.text(id).count(g.shares().size());
                byEngine.accept(g.shares());
                f.text(g.slots());
            });
            feedAllowedUtilizations(f);
            feedBatchPlaces(f);
            feedContextKeptSeconds(f);
            return HexFormat.of().formatHex(f.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }

    /**
     * Every route's {@link Route#allowedUtilization()}, in route order, after the rest of the content and only when
     * some route has one. A snapshot whose routes have none (from a producer that predates the field) then hashes
     * exactly as it did before the field existed, so that a gateway still accepts such a snapshot from an older
     * control plane or its own snapshot cache file. What is fed before is self-delimiting (lengths before contents),
     * so a trailer cannot make two contents feed alike.
     */
    private void feedAllowedUtilizations(Feed f) {
        boolean any = false;
        for (Map<String, Route> byClass : routes.values()) {
            for (Route r : byClass.values()) {
                any |= !Double.isNaN(r.allowedUtilization());
            }
        }
        if (!any) {
            return;
        }
        for (Map<String, Route> byClass : routes.values()) {
            for (Route r : byClass.values()) {
                f.number(r.allowedUtilization());
            }
        }
    }

    /**
     * Every engine's {@link EngineState#batchPlaces()}, in engine order, tagged by the field's name, after the rest of
     * the content and only when some engine has one: a snapshot without them (a fleet whose batches nobody knows, or a
     * producer that predates the field) hashes exactly as it did before the field existed.
     */
    private void feedBatchPlaces(Feed f) {
        if (engines.values().stream().allMatch(e -> Double.isNaN(e.batchPlaces()))) {
            return;
        }
        f.text("batch_places");
        engines.values().forEach(e -> f.number(e.batchPlaces()));
    }

    /**
     * Every engine's {@link EngineState#contextKeptSeconds()}, as {@link #feedBatchPlaces}: tagged, after the rest, and
     * only when some engine has one.
     */
    private void feedContextKeptSeconds(Feed f) {
        if (engines.values().stream().allMatch(e -> Double.isNaN(e.contextKeptSeconds()))) {
            return;
        }
        f.text("context_kept_seconds");
        engines.values().forEach(e -> f.number(e.contextKeptSeconds()));
    }

    /**
     * Feeds values to a digest unambiguously: lengths before contents, numbers as their bits. Bytes go
     * through a buffer: a large fleet's snapshot feeds millions of small values, and one digest update
     * per value would cost more than the hashing itself.
     */
    private static final class Feed {
        private static final java.lang.invoke.VarHandle LONGS = java.lang.invoke.MethodHandles.byteArrayViewVarHandle(
                long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
        private static final java.lang.invoke.VarHandle INTS = java.lang.invoke.MethodHandles.byteArrayViewVarHandle(
                int[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
        private final MessageDigest sha;
        private final byte[] buffer;
        private int used;

        Feed(MessageDigest sha) {
            this(sha, 1 << 16);
        }

        /** A feed into {@code sha}, or with a null digest into its buffer alone, which must then hold all it is fed. */
        Feed(MessageDigest sha, int bufferSize) {
            this.sha = sha;
            this.buffer = new byte[bufferSize];
        }

        Feed count(long v) {
            if (used + 8 > buffer.length) {
                flush();
            }
            LONGS.set(buffer, used, v); // the same little-endian bytes as a loop over them, in one store
            used += 8;
            return this;
        }

        Feed index(int v) {
            if (used + 4 > buffer.length) {
                flush();
            }
            // four plain stores, the bytes INTS.set writes: called once per group of every grouped route, often
            // from places where the JIT gave up inlining the VarHandle
            byte[] b = buffer;
            b[used] = (byte) v;
            b[used + 1] = (byte) (v >>> 8);
            b[used + 2] = (byte) (v >>> 16);
            b[used + 3] = (byte) (v >>> 24);
            used += 4;
            return this;
        }

        /**
         * {@code index(rank[i]).number(value[i])} for every i, the same bytes: one tight loop for a route's
         * weights, a million pairs on a large fleet.
         */
        Feed pairs(int[] rank, double[] value) {
            for (int i = 0; i < rank.length; ) {
                if (used + 12 > buffer.length) {
                    flush();
                }
                int end = Math.min(rank.length, i + (buffer.length - used) / 12);
                int at = used;
                for (; i < end; i++, at += 12) {
                    INTS.set(buffer, at, rank[i]);
                    LONGS.set(buffer, at + 4, Double.doubleToLongBits(value[i]));
                }
                used = at;
            }
            return this;
        }

        Feed number(double v) {
            return count(Double.doubleToLongBits(v));
        }

        Feed text(String s) {
            int n = s.length();
            if (n <= 256) { // ASCII text, most of what a snapshot holds, straight into the buffer: the same bytes
                if (used + 8 + n > buffer.length) {
                    flush();
                }
                int at = used + 8;
                for (int i = 0; i < n; i++) {
                    char c = s.charAt(i);
                    if (c >= 0x80) {
                        return text(s.getBytes(StandardCharsets.UTF_8));
                    }
                    buffer[at + i] = (byte) c;
                }
                count(n);
                used += n;
                return this;
            }
            return text(s.getBytes(StandardCharsets.UTF_8));
        }

        /** Bytes as they are, already in the feed's form (see {@link EngineTexts#encode}). */
        Feed bytes(byte[] b) {
            if (used + b.length > buffer.length) {
                flush();
                if (b.length > buffer.length) {
                    sha.update(b);
                    return this;
                }
            }
            System.arraycopy(b, 0, buffer, used, b.length);
            used += b.length;
            return this;
        }

        /** A text given by its UTF-8 bytes. */
        Feed text(byte[] b) {
            return count(b.length).bytes(b);
        }

        byte[] digest() {
            flush();
            return sha.digest();
        }

        private void flush() {
            sha.update(buffer, 0, used);
            used = 0;
        }
    }

    /**
     * Computes content hashes ({@link Snapshot#contentHash(Hasher)}) for a series of snapshots, remembering each
     * engine's texts (id, cluster, region, endpoint, models, priority scheduling) as the hash feeds them from the
     * last snapshot it hashed. A large fleet's re-solves describe their engines with the very strings of the last
     * one, and reading four thousand engines' strings from wherever the heap holds them was a third of the hash's
     * time; copying the kept bytes is not. An engine's bytes are used only when those six references are the ones
     * they were made from, so what is fed is what the strings would give: the hash is the same with any hasher. Whoever seals a
     * series of snapshots (a policy, a control plane) holds one. Safe to share between threads: a race only costs
     * the reuse.
     */
    public static final class Hasher {
        private volatile EngineTexts engineTexts;
    }

    private static final class EngineTexts {
        private final String[] ids;
        private final EngineState[] states; // for the identity of their strings only
        private final byte[][] texts;

        private EngineTexts(int n) {
            ids = new String[n];
            states = new EngineState[n];
            texts = new byte[n][];
        }

        /** A table for {@code n} engines holding the first {@code count} of {@code known}'s, which matched. */
        static EngineTexts startingFrom(EngineTexts known, int count, int n) {
            EngineTexts t = new EngineTexts(n);
            if (known != null) {
                System.arraycopy(known.ids, 0, t.ids, 0, count);
                System.arraycopy(known.states, 0, t.states, 0, count);
                System.arraycopy(known.texts, 0, t.texts, 0, count);
            }
            return t;
        }

        /** Engine {@code j}'s kept bytes if it is described by the same strings, else null. */
        byte[] of(int j, String id, EngineState e) {
            if (j >= ids.length || ids[j] != id) {
                return null;
            }
            EngineState was = states[j];
            return was.cluster() == e.cluster() && was.region() == e.region() && was.endpoint() == e.endpoint()
                    && was.models() == e.models() && was.priorityScheduling() == e.priorityScheduling()
                    ? texts[j] : null;
        }

        void put(int j, String id, EngineState e, byte[] bytes) {
            ids[j] = id;
            states[j] = e;
            texts[j] = bytes;
        }

        /**
         * The bytes the feed's texts give for the engine's id, cluster, region, endpoint, models and its priority
         * scheduling when it has one.
         */
        static byte[] encode(String id, EngineState e) {
            Feed f = new Feed(null, 96 + 8 * e.models().size() + 4 * (id.length() + e.cluster().length()
                    + e.region().length() + e.endpoint().length() + e.models().stream().mapToInt(String::length).sum()));
            f.text(id).text(e.cluster()).text(e.region()).text(e.endpoint()).count(e.models().size());
            e.models().forEach(f::text);
            if (e.priorityScheduling() != PriorityScheduling.NONE) { // absent for most engines: their hash as before
                f.text(e.priorityScheduling().word());
            }
            return Arrays.copyOf(f.buffer, f.used);
        }
    }

    /** This snapshot with {@code newVersion} and its content hash filled in. */
    public Snapshot sealed(long newVersion) {
        return sealed(newVersion, new Hasher());
    }

    /** {@link #sealed(long)}, hashed by {@code hasher}. */
    public Snapshot sealed(long newVersion, Hasher hasher) {
        return new Snapshot(newVersion, contentHash(hasher), policy, fleetUtilization, retryBudget, routes, engines,
                networkRttMs, objective, groups);
    }

    /** This snapshot with {@code engines} in place of its engines' states, sealed at its version. */
    public Snapshot withEngines(Map<String, EngineState> engines) {
        return new Snapshot(version, "", policy, fleetUtilization, retryBudget, routes, engines, networkRttMs, objective,
                groups).sealed(version);
    }

    /**
     * This snapshot as gateway cluster {@code gateway} needs it: only its own routes and its own row of
     * round trips, every engine (a gateway falls back to the nearest allowed engine when its snapshot is too
     * old), the engine groups its routes use, the same version and objective, and a content hash of its own. On
     * the L fleet that is about a fiftieth of the whole, which lists every gateway cluster's routes.
     */
    public Snapshot forGateway(String gateway) {
        return forGateway(gateway, new Hasher());
    }

    /** {@link #forGateway(String)}, hashed by {@code hasher}: a control plane makes every cluster's view with one. */
    public Snapshot forGateway(String gateway, Hasher hasher) {
        Map<String, Map<String, Route>> own = routes.containsKey(gateway) ? Map.of(gateway, routes.get(gateway))
                : Map.of();
        Map<String, Map<String, Double>> rtt = networkRttMs.containsKey(gateway)
                ? Map.of(gateway, networkRttMs.get(gateway)) : Map.of();
        Map<String, EngineGroup> used = new TreeMap<>();
        own.values().forEach(byClass -> byClass.values().forEach(r -> r.groups().keySet()
                .forEach(id -> used.put(id, groups.get(id)))));
        return new Snapshot(version, "", policy, fleetUtilization, retryBudget, own, engines, rtt, objective, used)
                .sealed(version, hasher);
    }

    /**
     * The utilization that sets the retry budget of {@code route}'s class: the route's
     * {@link Route#allowedUtilization() allowed utilization}, or {@link #fleetUtilization()} for a route without one
     * (a snapshot from a producer that predates the field).
     */
    public double allowedUtilizationOf(Route route) {
        double u = route.allowedUtilization();
        return Double.isNaN(u) ? fleetUtilization : u;
    }

    /** The retry ratio r(u) of {@code route}'s class: {@link #retryBudget()} at {@link #allowedUtilizationOf}. */
    public double retryRatio(Route route) {
        return retryBudget.ratio(allowedUtilizationOf(route));
    }

    /** The route of class {@code classId} at gateway cluster {@code gateway}, or null. */
    public Route route(String gateway, String classId) {
        Map<String, Route> byClass = routes.get(gateway);
        return byClass == null ? null : byClass.get(classId);
    }
}
