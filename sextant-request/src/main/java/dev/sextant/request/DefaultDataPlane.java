package dev.sextant.request;

import dev.sextant.snapshot.KeyOrder;
import dev.sextant.snapshot.Snapshot;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The data plane; see {@link DataPlane}.
 *
 * <p>Why one long class: it is the per-request path (admission, the key's order, bounded load, spill, ejection,
 * retries), each step reading the same compiled snapshot and the same counters, and one class keeps that path free
 * of indirection (its cost is measured per request, BENCHMARKS.md). What is built once per snapshot is in
 * {@link Compiled} and {@link ClassRoute}; per-engine state in {@link EngineCell}; the spread of shared prefixes in
 * {@link PrefixSpread}; retry budgets in {@link RetryTokens}.
 */
final class DefaultDataPlane implements DataPlane {
    private final String gateway;
    private final Ticker ticker;
    private final DataPlaneOptions options;
    private final long maxAgeNanos;
    private final long shedRetryAfterNanos;
    private final long unavailableRetryAfterNanos;
    private final long ejectionBaseNanos;
    private final long ejectionMaxNanos;
    private final long backoffBaseNanos;
    private final long backoffMaxNanos;
    private final double loadFactor;
    private final int limit;
    private final int minInFlight;

    private final Map<String, EngineCell> cells = new ConcurrentHashMap<>();
    private final AtomicInteger totalInFlight = new AtomicInteger();
    /** Requests sent away from an engine over its expected load (see {@link #spill}). */
    private final java.util.concurrent.atomic.LongAdder spills = new java.util.concurrent.atomic.LongAdder();
    /** Requests in flight by pool of models that share engines (Compiled.Pools), kept across snapshots. */
    private final java.util.concurrent.ConcurrentHashMap<String, Pool> pools =
            new java.util.concurrent.ConcurrentHashMap<>();
    /**
     * Which conversations this gateway placed recently, and where spacing moved any of them; null when
     * spacing is off, since nothing else reads it.
     */
    private final RecentKeys recent;
    /**
     * When each conversation's last request ended (the gateway's table, on the ticker's clock), to tell a returning
     * conversation whose engine's cache no longer holds its context; null when not given or spacing is off.
     */
    private final ReuseTimes lastEnds;
    /**
     * Each class's retry budget, by class id: its own deposits pay for its own retries, so that an idle class
     * cannot fund a retry storm on a saturated class's engines. Kept across snapshots, like the engines' cells.
     */
    private final Map<String, RetryTokens> retryBudgets = new ConcurrentHashMap<>();
    /** Held by the one thread deciding an ejection; others skip rather than wait (lock-free). */
    private final AtomicBoolean ejecting = new AtomicBoolean();
    private final AtomicBoolean inFallback = new AtomicBoolean();

    private volatile Compiled compiled;
    /**
     * The last few intervals between the control plane's words (a new snapshot or the held one confirmed), ns, and how
     * many have been seen; written under the swap lock. Their longest, twice, is how long the control plane may be
     * silent before the gateway judges engines' capacity from its own answers ({@link #silent}).
     */
    private final long[] confirmGaps = new long[CONFIRM_GAPS];
    private int confirmations;
    private long lastConfirmed;
    /**
     * Silence longer than this says the control plane is away, ns: twice its expected cadence
     * ({@link DataPlaneOptions#controlPlaneCadence}) until three intervals are seen, or never where that is unknown.
     */
    private volatile long silentAfterNanos;
    static final int CONFIRM_GAPS = 5;
    private final PrefixSpread prefixes = new PrefixSpread();
    /** Each class's tenants' demand, so that a class's shed falls first on tenants above their fair share. */
    private final FairShares fair = new FairShares();

    DefaultDataPlane(String gateway, Snapshot snapshot, Ticker ticker, DataPlaneOptions options, long ageNanos,
                     ReuseTimes lastEnds) {
        if (gateway == null || gateway.isEmpty()) {
            throw new IllegalArgumentException("gatewayCluster: missing (expected: a gateway cluster id)");
        }
        if (snapshot == null || ticker == null || options == null) {
            throw new IllegalArgumentException("snapshot, ticker and options: required");
        }
        this.gateway = gateway;
        this.ticker = ticker;
        this.options = options;
        this.maxAgeNanos = options.maxSnapshotAge().toNanos();
        Duration cadence = options.controlPlaneCadence();
        this.silentAfterNanos = cadence == null ? Long.MAX_VALUE : 2 * cadence.toNanos(); // a year at most: no overflow
        this.shedRetryAfterNanos = options.shedRetryAfter().toNanos();
        this.unavailableRetryAfterNanos = options.unavailableRetryAfter().toNanos();
        this.ejectionBaseNanos = options.ejectionBase().toNanos();
        this.ejectionMaxNanos = options.ejectionMax().toNanos();
        this.backoffBaseNanos = options.retryBackoffBase().toNanos();
        this.backoffMaxNanos = options.retryBackoffMax().toNanos();
        this.loadFactor = 1 + options.boundedLoadEpsilon();
        this.limit = options.maxInFlightPerEngine();
        this.minInFlight = options.boundedLoadMinInFlight();
        this.recent = options.spacePrefills() ? new RecentKeys(options.recentKeys()) : null;
        this.lastEnds = recent == null ? null : lastEnds;
        long now = ticker.nanos();
        Compiled first = Compiled.compile(gateway, snapshot, null, now - ageNanos, this::cell, this::retryBudget,
                this::pool, options);
        floors(first);
        this.compiled = first;
        this.lastConfirmed = first.receivedAt;
    }

    /**
     * Whether the control plane has been silent for longer than twice the longest of the last {@value #CONFIRM_GAPS}
     * intervals between its words (before three are seen, twice its expected cadence where that is known), or the
     * snapshot is past its maximum age: then nothing but this gateway's own answers
     * says what an engine can serve (docs/request-path.md §4, "An engine that does not keep up within its allowance").
     * While the control plane speaks, an engine's capacity is its estimate: it finds a slow engine within a cycle, and a
     * gateway second-guessing a live plan moved load that the plan had placed (and lost it its cache).
     */
    private boolean silent(Compiled c, long now) {
        long age = now - c.receivedAt;
        return age > silentAfterNanos || age > maxAgeNanos;
    }

    /** Counts one word of the control plane at {@code now} toward its cadence; under the swap lock. */
    private void confirmed(long now) {
        long gap = now - lastConfirmed;
        lastConfirmed = now;
        if (gap <= 0) {
            return;
        }
        confirmGaps[confirmations++ % CONFIRM_GAPS] = gap;
        if (confirmations >= 3) {
            long longest = 0;
            for (int i = 0; i < Math.min(confirmations, CONFIRM_GAPS); i++) {
                longest = Math.max(longest, confirmGaps[i]);
            }
            silentAfterNanos = 2 * longest;
        }
    }

    private EngineCell cell(String id) {
        return cells.computeIfAbsent(id, EngineCell::new);
    }

    /** Class {@code id}'s retry budget; a new class's starts empty, with its floor's first token available. */
    private RetryTokens retryBudget(String id) {
        return retryBudgets.computeIfAbsent(id, x -> new RetryTokens(options.retryTokenCap(), ticker.nanos()));
    }

    /** Sets every class's floor from {@code c}'s snapshot and forgets the budgets of classes it no longer has. */
    private void floors(Compiled c) {
        double floor = c.snapshot.retryBudget().minRetriesPerSecond();
        for (ClassRoute k : c.byId.values()) {
            k.retryTokens.floorPerSecond(floor);
        }
        retryBudgets.keySet().retainAll(c.byId.keySet());
        fair.retain(c.byId.keySet());
    }

    // ---------------------------------------------------------------- request path

    @Override
    public Decision route(RequestMeta request) {
        Compiled c = compiled;
        long now = ticker.nanos();
        ClassRoute k = c.classify(request, options.defaultPriority());
        if (k == null) {
            return c.refusal(gateway, request, unavailableRetryAfterNanos);
        }
        if (!k.hasAllowedEngine()) {
            return noAllowedEngine(c, k);
        }
        boolean stale = stale(c, now);
        if (stale && k.table == null) {
            if (k.near.length == 0) {
                return noAllowedEngine(c, k);
            }
            // No weights to follow: nearest allowed engine, fewest in flight, with the per-engine concurrency
            // limit as the only guard.
            k.retryTokens.deposit(k.depositMicro);
            int i = pickNear(k, null, now);
            if (i < 0) {
                return engineLimit(c, k, true);
            }
            return Decision.routed(k.id, c.snapshot.version(), true, k.near[i], k.nearEndpoints[i],
                    k.nearEnginePriority[i], 1, 0,
                    request.affinityKey(), request.requestId(), k.nearExpectedTtftMs[i], null, k.pool, now, "nearest");
        }
        // A snapshot too old to trust its shed fractions (the demand they were computed for has moved on) still
        // has the best weights there are: keys keep their engines, and load beyond what they planned spills
        String tenant = request.tenant();
        FairShares.ClassShares shares = tenant == null ? null : fair.arrived(k.id, tenant, request.tenantWeight(), now);
        if (!stale && k.shed > 0) {
            boolean drawn = Hashing.unit(Hashing.mix(request.requestId() ^ Hashing.ADMISSION_SALT)) < k.shed;
            if (shares == null ? drawn : fair.shed(shares, tenant, k.shed, drawn, now)) {
                return shed(c, k);
            }
        }
        if (k.table == null) {
            return noAllowedEngine(c, k);
        }
        k.retryTokens.deposit(k.depositMicro);
        int prefix = request.prefixKey() == 0 || !options.spreadSharedPrefixes() ? -1
                : prefixes.cell(request.prefixKey());
        long key = prefix < 0 ? request.affinityKey()
                : prefixes.key(prefix, request.prefixKey(), request.affinityKey(), prefixQuota(k), now);
        int first = k.table.first(key);
        // a conversation is known by its own key, whatever its prefix's spread makes of the key it is placed by
        long conversation = request.affinityKey();
        int seen = recent == null ? RecentKeys.NEW : recent.lookup(k, conversation);
        if (seen != RecentKeys.NEW && lastEnds != null) {
            long kept = k.keptNanos[seen >= 0 ? seen : first];
            if (kept != Long.MAX_VALUE && gone(kept, lastEnds.sinceEnd(conversation, now))) {
                // its context is gone from its engine's cache: nothing there to lose, so it is placed as a new one
                seen = RecentKeys.NEW;
            }
        }
        int i = seen >= 0 ? remembered(k, seen, now) : -1;
        boolean kept = i >= 0;
        if (i < 0) {
            i = pickHashed(k, key, first, null, now);
        }
        if (i < 0) {
            // every engine the weights give the class here is at its limit: an allowed engine outside them that has
            // room takes the request, as a spill would, before it is refused (an engine's limit bounds the queue
            // there, not the class's traffic; shed only where there is no room)
            int n = spill(k, first, key, false, k.cells, true, now);
            if (n < 0) {
                return engineLimit(c, k, stale);
            }
            spills.increment();
            return toNear(c, k, n, stale, key, request, now, "spill:limit", prefix);
        }
        if (k.cells[i].ejected(now)) {
            // every engine the weights give the class here is ejected (this is the walk's last resort): go where a
            // retry would go after the attempt failed, outside them. The whole class moves, so an engine's room counts
            // what the plan sends it from the other gateways (their demand has not moved); where none has room, the
            // least full takes it
            // a conversation spilled before goes back where its cache is while that engine keeps up (bounded load's
            // slack over the room a new one needs): the room of the nearest engines comes and goes with each request,
            // and a conversation sent by it alone changes engines, and prefills its context again, at most turns
            int n = recent == null ? -1 : keptSpill(k, recent.lookupSpill(k, conversation), i, now);
            String how = "recent";
            if (n < 0) {
                n = spill(k, i, key, false, k.cells, true, now);
                how = "spill:ejected";
            }
            if (n < 0) {
                n = leastFull(k, k.cells, now);
                how = "least-full";
            }
            if (n >= 0) {
                unacquire(k, k.cells[i]);
                if (recent != null) {
                    recent.recordSpill(k, conversation, n);
                }
                return toNear(c, k, n, stale, key, request, now, how, prefix);
            }
        }
        double excess = excess(k.cells[i], k.enginePriority[i], k.allowanceRps[i], k.plannedMs[i], now);
        String spaced = null; // how spacing moved a new conversation, if it did
        if (recent != null && excess == 0 && i == first && seen == RecentKeys.NEW && prefix < 0) {
            int s = spaced(k, key, first, now);
            String how = "spaced:prefill";
            if (s < 0) {
                s = freePlace(k, key, first, now);
                how = "spaced:full-batch";
            }
            if (s >= 0) {
                unacquire(k, k.cells[first]);
                i = s;
                spaced = how;
            }
        }
        if (recent != null) {
            // only where spacing put a conversation is kept; any other move (bounded load, an ejection) is the
            // key's order's, as the weights and the engines' state make it, and the conversation follows it again
            recent.record(k, conversation, i, spaced == null && !kept);
        }
        if (excess > 0) {
            // the excess share spills by key; a lower priority that the excess is large enough to shed here spills
            // too where there is room, and is shed only where there is none
            boolean shedHere = k.rank > 0 && k.sharedAbove.contains(k.cells[i])
                    && excess > (double) (k.ranks - 1 - k.rank) / k.ranks
                    && k.cells[i].queueing(QUEUE_SLACK_MS, k.enginePriority[i]);
            if (shedHere || Hashing.unit(Hashing.mix(key ^ Hashing.SPILL_SALT)) < excess) {
                int s = spill(k, i, key, shedHere, null, false, now);
                if (s >= 0 || shedHere) {
                    unacquire(k, k.cells[i]);
                }
                if (s >= 0) {
                    spills.increment();
                    return toNear(c, k, s, stale, key, request, now, "spill:overload", prefix);
                }
                if (shedHere) {
                    return Decision.refused(k.id, c.snapshot.version(), stale, Refusal.SHED, "engine "
                            + k.cells[i].id + " is offered more than the policy planned for it and no allowed engine "
                            + "nearby has room: class '" + k.id + "' (priority " + k.priority + ") is shed here so "
                            + "that higher priorities keep their engines, until the control plane plans for this "
                            + "demand", shedRetryAfterNanos);
                }
            }
        }
        return prefixes.count(Decision.routed(k.id, c.snapshot.version(), stale, k.cells[i], k.endpoints[i],
                k.enginePriority[i], 1, 0, key, request.requestId(), k.expectedTtftMs[i], null, k.pool, now,
                i == first ? "key" : kept ? "recent" : spaced != null ? spaced : passedOver(k, first, now)),
                prefix);
    }

    /**
     * Whether a conversation away {@code awayNanos} (-1: unknown) has lost its context from an engine whose cache keeps
     * one {@code keptNanos} by the snapshot ({@link Long#MAX_VALUE}: every one, or unknown): away more than
     * {@link #GONE_AFTER_KEPT} times that (docs/request-path.md §4, "Spacing new conversations").
     */
    static boolean gone(long keptNanos, long awayNanos) {
        return awayNanos / GONE_AFTER_KEPT > keptNanos;
    }

    /**
     * How many times its cache's keeping time a conversation must be away for its context to count as gone. The time is
     * Che's characteristic time at the plan's load, where a context is evicted on average: the load varies about the
     * plan's level and a cache of a few dozen contexts evicts some sooner, some later. Measured with the simulator (the
     * cache hits of the prompts of conversations back after more than once and more than twice the time, under routing
     * that keeps them): 0.6–8.2% of their tokens past once, none past twice.
     */
    static final long GONE_AFTER_KEPT = 2;

    /** A first attempt routed to {@code k}'s allowed engine {@code n} ({@link ClassRoute#near}), counted in flight. */
    private Decision toNear(Compiled c, ClassRoute k, int n, boolean stale, long key, RequestMeta request, long now,
                            String how, int prefix) {
        return prefixes.count(Decision.routed(k.id, c.snapshot.version(), stale, k.near[n], k.nearEndpoints[n],
                k.nearEnginePriority[n], 1, 0, key, request.requestId(), k.nearExpectedTtftMs[n], null, k.pool, now,
                how), prefix);
    }

    /**
     * The engine {@code place} of {@code k}'s table, where spacing moved the conversation (its cache is
     * there), if it still has a share of the class, is not ejected, is within bounded load and below its limit; -1
     * otherwise (the conversation then follows its key's order).
     */
    private int remembered(ClassRoute k, int place, long now) {
        EngineCell cell = k.cells[place];
        return k.share[place] > 0 && !cell.ejected(now) && withinBoundInRotation(k, cell.inFlight.get(), k.share[place], now)
                && acquire(k, cell) ? place : -1;
    }

    /**
     * Spacing (docs/request-path.md §4, "Spacing new conversations"): where a new conversation goes instead of its own
     * engine {@code first}, where it is placed already, or -1 to stay there. It moves only while {@code first} holds
     * more than its share of this gateway's requests in flight (⌈μ⌉, μ its share of the pool's, this one counted:
     * bounded load's bound without its ε, noise term or floor, since a new conversation has no cache to lose); then to
     * the first of the key's next {@link DataPlaneOptions#maxWalk()} engines that would hold fewer per unit of share
     * than {@code first} does, is not ejected, has not failed one of this gateway's requests within the base ejection
     * time, is within bounded load, is offered less than its allowance, and whose planned latency is at most
     * {@code first}'s plus a times {@code first}'s expected TTFT, a the requests ahead of it there: a move the
     * snapshot's own figures say lengthens the request is not made. Where {@code first} is offered beyond its
     * allowance (a burst the plan did not foresee) it moves only while {@code first}'s answers show a queue and the
     * class's plan sheds nothing, and only to an engine that also has a free place in its batch by the snapshot's count
     * ({@link #occupied}): beyond the plan, a move needs evidence on both sides, a queue where it leaves and room by the
     * plan's figures and the batch where it goes, and a fleet short of capacity is the spill's and the shedding's to
     * handle.
     */
    private int spaced(ClassRoute k, long key, int first, long now) {
        EngineCell own = k.cells[first];
        int ahead = own.inFlight.get() - 1;
        if (ahead <= 0 || ahead + 1 <= Math.ceil(k.share[first] * k.pool.inFlight.get())) {
            return -1;
        }
        boolean beyondPlan = !(own.offeredRps(now) <= k.allowanceRps[first]);
        if (beyondPlan && (k.shed > 0 || !own.queueing(QUEUE_SLACK_MS, k.enginePriority[first]))) {
            return -1;
        }
        // past the fast return, this engine holds more than its own share: its share of the engines in rotation
        double inRotation = shareInRotation(k, now);
        if (ahead + 1 <= Math.ceil(k.share[first] / inRotation * k.pool.inFlight.get())) {
            return -1;
        }
        double within = k.plannedMs[first] + ahead * k.expectedTtftMs[first];
        return nextInOrder(k, key, first, e -> {
            EngineCell cell = k.cells[e];
            return (cell.inFlight.get() + 1) * k.share[first] < (ahead + 1) * k.share[e]
                    && k.plannedMs[e] <= within && !cell.ejected(now) && !cell.failedWithin(now, ejectionBaseNanos)
                    && withinBound(k, cell.inFlight.get(), k.share[e] / inRotation)
                    && cell.offeredRps(now) < k.allowanceRps[e]
                    && (!beyondPlan || hasFreePlace(k, e));
        });
    }

    /**
     * The first of the key's next {@link DataPlaneOptions#maxWalk()} engines, other than {@code first}, that
     * {@code fits} and is below the class's limit; counted in flight, or -1.
     */
    private int nextInOrder(ClassRoute k, long key, int first, java.util.function.IntPredicate fits) {
        KeyOrder t = k.table;
        int len = t.probeLength();
        int budget = Math.min(t.orderLength(), options.maxWalk());
        int distinct = 0;
        for (int i = 0; i < len && distinct < budget; i++) {
            int e = t.probe(key, i);
            if (t.repeats(key, i, e)) {
                continue;
            }
            distinct++;
            if (e != first && fits.test(e) && acquire(k, k.cells[e])) {
                return e;
            }
        }
        return -1;
    }

    /**
     * Where a new conversation goes instead of its own engine {@code first} (counted in flight there already) when
     * that engine's batch is estimated full, or -1 to stay (docs/request-path.md §4, "A full batch"). Full: this
     * gateway's requests in flight there and the other gateways' as the plan has them ({@link #occupied}) exceed
     * the places its batch has ({@link ClassRoute#places}), so the request waits for one; a full batch frees a place
     * every planned duration ÷ places on average, so it would wait about that times the requests beyond the places.
     * It goes to the first of the key's next {@link DataPlaneOptions#maxWalk()} engines that has a free place by the
     * same count, whose planned duration is at most {@code first}'s plus that wait, and that is not ejected and is
     * offered less than its allowance: a move the snapshot's own figures say lengthens the request is not made.
     */
    private int freePlace(ClassRoute k, long key, int first, long now) {
        double places = k.places[first];
        double beyond = occupied(k, first) - places;
        if (!(places >= 1) || !(beyond > 0)) {
            return -1;
        }
        double within = k.plannedMs[first] * (1 + beyond / places);
        return nextInOrder(k, key, first, e -> hasFreePlace(k, e)
                && k.plannedMs[e] <= within && !k.cells[e].ejected(now)
                && k.cells[e].offeredRps(now) < k.allowanceRps[e]);
    }

    /**
     * Whether {@code k}'s engine {@code e} has a place for one more request by {@link #occupied}; false where unknown.
     */
    private static boolean hasFreePlace(ClassRoute k, int e) {
        return k.places[e] >= 1 && occupied(k, e) + 1 <= k.places[e];
    }

    /** Requests {@code k}'s engine {@code e} is estimated to hold: this gateway's in flight, the others' by the plan. */
    private static double occupied(ClassRoute k, int e) {
        return k.cells[e].inFlight.get() + k.othersInFlight[e];
    }

    /**
     * Requests in flight a prefix may put on each engine of its spread before it takes one more: what bounded load
     * leaves above a mean engine's share (ε × m / n for m in flight in the pool over n engines), and never less than
     * the bounded load's minimum, below which an engine is not considered loaded (docs/request-path.md §4).
     */
    private double prefixQuota(ClassRoute k) {
        return Math.max(minInFlight, (loadFactor - 1) * (k.pool.inFlight.get() + 1) / k.table.orderLength());
    }

    /**
     * The share of the requests choosing {@code cell} that it is offered beyond what this gateway expects of it (0:
     * none): the rate of requests whose key chose it ({@link EngineCell#offered}, counting this one) against its
     * allowance (what the policy sends it from here plus its planned spare capacity). Beyond the allowance by three
     * standard deviations of a Poisson rate over the averaging window, or beyond the allowance itself when this
     * gateway's recent answers from it show a queue ({@link EngineCell#queueing}), the excess is
     * 1 − threshold / rate. A spill that started beyond chance with a queue showing holds to the allowance itself
     * ({@link QueueSignal#spilling}) until the rate is back within it or a new snapshot plans for it: otherwise the
     * queue it drains would hand the engine back the three deviations, and a lasting surge would fill it, drain
     * and fill it again. The requests whose key hashes below the excess spill (the same conversations move, the
     * rest keep their engine and cache); where nothing nearby has room, lower priorities are shed in proportion (see
     * {@link #route}). While the control plane is {@link #silent}, an engine offered no more than its allowance that
     * does not keep up with it (its first tokens as they come show a queue, or its answers take longer than planned,
     * while it holds more of this gateway's requests than the allowance at the planned duration {@code plannedMs} would
     * put there) has its allowance scaled by its
     * {@link QueueSignal#pace} (docs/request-path.md §4, "An engine that does not keep up within its allowance"). 0
     * while the bounded load's minimum or fewer are in flight there; a spill of the rate under way holds through that.
     */
    private double excess(EngineCell cell, int enginePriority, double allowanceRps, double plannedMs, long now) {
        double rate = cell.offered(now);
        QueueSignal signal = cell.signal(enginePriority);
        if (cell.inFlight.get() <= minInFlight) {
            // not loaded: nothing spills. A spill of the rate beyond the allowance still ends only with the rate back
            // within it: the spill itself drains the engine to here, and ending it here handed the engine every key
            // again (a spill of an engine's pace ends: at the minimum its queue is gone)
            if (!signal.spilling || signal.pacing || rate <= allowanceRps) {
                signal.endSpill();
            }
            return 0;
        }
        boolean queueing = cell.queueing(QUEUE_SLACK_MS, enginePriority);
        // with the control plane silent, an engine offered no more than its allowance that holds more of this
        // gateway's requests than it would at its whole allowance at the planned pace (Little's law), with its answers
        // showing a queue, does not keep up: it is slow, or others fill it. Its first tokens k times later than at its
        // floor say that it serves about k times fewer requests than the allowance assumed; the allowance scales by
        // that pace, and holds so while the spill lasts
        // (or its answers take longer than the held plan says by the slow factor: the floor follows a lasting
        // slow-down up, the held plan does not)
        // (the first tokens as they come say it, not the answers as they end: an engine slowed eightfold with a full
        // batch and long answers ends none of them for half a minute)
        boolean slow = signal.behindThePlan();
        boolean behind = rate <= allowanceRps && silent(compiled, now) && (signal.spilling && signal.pacing
                || (signal.firstTokensLate(QUEUE_SLACK_MS) || slow)
                && cell.inFlight.get() > allowanceRps * plannedMs / 1000);
        double allowance = behind ? allowanceRps * signal.pace() : allowanceRps;
        queueing |= behind;
        if (rate <= allowance) {
            signal.endSpill();
            return 0;
        }
        double beyondChance = allowance + NOISE_SIGMAS * Math.sqrt(allowance / EngineCell.RATE_WINDOW_S);
        if (queueing && rate > beyondChance) {
            signal.spilling = true;
        }
        if (signal.spilling && behind) {
            signal.pacing = true; // until the spill ends: a moment offered beyond the allowance does not end it
        }
        double threshold = queueing || signal.spilling ? allowance : beyondChance;
        if (rate > threshold) {
            return 1 - threshold / rate;
        }
        return 0;
    }

    /**
     * The answers whose duration is measured against the plan: those whose request id is 0 modulo this plus one, one in
     * four (ids are this gateway's own, one per request, and say nothing of the engine a key chose).
     */
    static final long DURATION_SAMPLE = 3;

    /** Milliseconds of TTFT beyond twice its floor before a recent TTFT shows a queue (a step's jitter). */
    static final double QUEUE_SLACK_MS = 5;

    /**
     * Where a request goes instead of engine {@code from} (the class's index), over its expected load: in the class's
     * nearest group of allowed engines that has one, an engine other than {@code from}, neither ejected nor failing,
     * below the class's limit, whose recent answers show no queue, and with room: it holds fewer of this gateway's
     * requests than its whole capacity would hold (its capacity × planned duration), or, when even that is taken (a
     * burst beyond what every engine nearby holds), it is estimated less full than {@code from} by more than bounded
     * load's factor ({@link #estimatedFill}). Of those, the key's first in rendezvous order (so that a spilled
     * conversation comes back to the engine that holds its cache) whose fill is within bounded load of their mean
     * fill (so that one hot key does not fill one engine while the next stays empty). A request that would otherwise
     * be shed for its priority ({@code withinPlan}) goes only where this gateway's requests stay within what the
     * policy planned there (its allowance × planned duration): when the whole fleet is short, moving it only moves
     * the queue. Counted in flight, or -1.
     */
    private int spill(ClassRoute k, int from, long key, boolean withinPlan, EngineCell[] tried, boolean others,
                      long now) {
        EngineCell[] near = k.near;
        EngineCell fromCell = k.cells[from];
        double fromFill = withinPlan ? Double.NaN : estimatedFill(k, k.nearOf[from], 0);
        for (int g = 0; g < near.length; ) {
            int end = k.nearGroupEnd[g];
            // the engines with room, and their mean fill
            double fills = 0;
            int room = 0;
            for (int i = g; i < end; i++) {
                double fill = spillFill(k, i, fromCell, withinPlan, tried, others, now);
                if (hasRoom(k, i, fill, fromFill)) {
                    fills += fill;
                    room++;
                }
            }
            // of those, the key's first in rendezvous order within bounded load of the mean fill
            int best = -1;
            long bestScore = 0;
            double meanFill = room == 0 ? 0 : fills / room;
            for (int i = g; i < end && room > 0; i++) {
                double fill = spillFill(k, i, fromCell, withinPlan, tried, others, now);
                double holds = holds(k, i);
                long score = Hashing.mix(key ^ near[i].hash);
                if (hasRoom(k, i, fill, fromFill) && withinMean(fill * holds, meanFill * holds)
                        && (best < 0 || Long.compareUnsigned(score, bestScore) > 0)) {
                    best = i;
                    bestScore = score;
                }
            }
            if (best >= 0 && acquire(k, near[best])) {
                return best;
            }
            g = end;
        }
        return -1;
    }

    /**
     * Allowed engine {@code place} of {@code k} (-1: none), where the conversation was spilled before while every engine
     * the weights give the class was ejected, if it is still outside them ({@code from} the ejected one the key chose),
     * healthy, below the class's limit, its answers show no queue, and it is estimated no fuller than bounded load's
     * factor of what its capacity holds; counted in flight. Otherwise -1.
     */
    private int keptSpill(ClassRoute k, int place, int from, long now) {
        if (place < 0) {
            return -1;
        }
        double fill = spillFill(k, place, k.cells[from], false, k.cells, true, now);
        return fill <= loadFactor && acquire(k, k.near[place]) ? place : -1;
    }

    /**
     * Of {@code k}'s allowed engines not in {@code exclude}, healthy (neither ejected nor failing) and below the class's
     * limit, the one estimated least full ({@link #estimatedFill}, with one more of this gateway's requests), the
     * nearest on a tie; counted in flight, or -1. Where every allowed engine is full, the overload is spread where it
     * is lightest rather than piled on the nearest.
     */
    private int leastFull(ClassRoute k, EngineCell[] exclude, long now) {
        int best = -1;
        double bestFill = Double.POSITIVE_INFINITY;
        for (int i = 0; i < k.near.length; i++) {
            EngineCell cell = k.near[i];
            if (failing(cell, now) || cell.inFlight.get() >= k.limit(cell) || !(holds(k, i) > 0)
                    || exclude != null && ClassRoute.indexOf(exclude, cell) >= 0) {
                continue;
            }
            double fill = estimatedFill(k, i, 1);
            if (fill < bestFill) {
                best = i;
                bestFill = fill;
            }
        }
        return best >= 0 && acquire(k, k.near[best]) ? best : -1;
    }

    /**
     * Whether fallback engine {@code i}, whose {@link #spillFill} is {@code fill}, has room for a spill from an engine
     * estimated {@code fromFill} full (NaN: only within its whole capacity).
     */
    private boolean hasRoom(ClassRoute k, int i, double fill, double fromFill) {
        return fill <= 1 || Double.isFinite(fill) && estimatedFill(k, i, 1) * loadFactor <= fromFill;
    }

    /**
     * How full fallback engine {@code i} is estimated to be with {@code more} of this gateway's requests: those in
     * flight from here, and what the policy sends it from other gateways (their rate × its planned duration, Little's
     * law), over what its capacity holds (capacity × planned duration); 0 when its capacity is unknown or {@code i}
     * is -1. An estimate: the other gateways' requests are what the plan says, not what they send now.
     */
    private double estimatedFill(ClassRoute k, int i, int more) {
        if (i < 0) {
            return 0;
        }
        double holds = holds(k, i);
        if (!(holds > 0)) {
            return 0;
        }
        double others = k.nearOthersRps[i] * k.nearPlannedMs[i] / 1000;
        return (k.near[i].inFlight.get() + more + others) / holds;
    }

    /**
     * How full {@code k}'s fallback engine {@code i} would be with one more of this gateway's requests, relative to
     * what its whole capacity holds (capacity × planned duration); +∞ when it may not take a spill.
     */
    private double spillFill(ClassRoute k, int i, EngineCell from, boolean withinPlan, EngineCell[] tried,
                             boolean others, long now) {
        EngineCell cell = k.near[i];
        int inFlight = cell.inFlight.get();
        if (cell == from || inFlight >= k.limit(cell) || failing(cell, now)
                || tried != null && ClassRoute.indexOf(tried, cell) >= 0
                || cell.queueing(QUEUE_SLACK_MS, k.nearEnginePriority[i])
                || withinPlan && inFlight + 1 > k.nearAllowanceRps[i] * k.nearPlannedMs[i] / 1000) {
            return Double.POSITIVE_INFINITY;
        }
        return others ? estimatedFill(k, i, 1) : (inFlight + 1) / holds(k, i);
    }

    /** Requests fallback engine {@code i} holds at its capacity: capacity × planned duration (Little's law). */
    private static double holds(ClassRoute k, int i) {
        return k.nearCapacityRps[i] * k.nearPlannedMs[i] / 1000;
    }

    private boolean stale(Compiled c, long now) {
        if (now - c.receivedAt <= maxAgeNanos) {
            return false;
        }
        if (inFallback.compareAndSet(false, true)) {
            options.listener().onFallback(true, "snapshot " + c.snapshot.version() + " is "
                    + (now - c.receivedAt) / 1_000_000_000L + " s old (limit " + maxAgeNanos / 1_000_000_000L
                    + " s): keeping its weights and keys, spilling load beyond what it planned to the nearest "
                    + "allowed engines with room, shedding nothing (its shed fractions were for an older demand)");
        }
        return true;
    }

    /**
     * The key's first choice {@code first} if it is usable, else a walk along the key's order (the slow path); a
     * retry ({@code exclude} given) walks at once. Returns the class's engine index, already counted in flight, or -1.
     */
    private int pickHashed(ClassRoute k, long key, int first, EngineCell[] exclude, long now) {
        if (exclude == null) {
            int e = first;
            EngineCell cell = k.cells[e];
            if (!cell.ejected(now) && withinBoundInRotation(k, cell.inFlight.get(), k.share[e], now)
                    && acquire(k, cell)) {
                return e;
            }
        }
        return walk(k, key, exclude, now);
    }

    /**
     * {@link #withinBound} for an engine of share {@code share} counted among the engines in rotation
     * ({@link #shareInRotation}); its own share, the stricter bound, first: passing it needs no scan of the table.
     */
    private boolean withinBoundInRotation(ClassRoute k, int inFlight, double share, long now) {
        return withinBound(k, inFlight, share) || withinBound(k, inFlight, share / shareInRotation(k, now));
    }

    /**
     * The share of {@code k}'s table held by its engines that are not ejected now; 1 when none is. Bounded load's mean
     * is over the engines in rotation: an ejected engine's keys walk to the others, and an engine that takes its part of
     * them holds more than its own share of the pool's requests in flight with nothing wrong. Counted against its own
     * share alone, every engine left was over its bound while one was ejected, and each request went to whichever
     * held fewest at that moment, its conversation's cache elsewhere (docs/request-path.md §4). Read only on the slow
     * path, once an engine is over the bound of its own share.
     */
    private static double shareInRotation(ClassRoute k, long now) {
        double in = 0;
        for (int e = 0; e < k.cells.length; e++) {
            if (!k.cells[e].ejected(now)) {
                in += k.share[e];
            }
        }
        return in > 0 ? Math.min(1, in) : 1;
    }

    /** Why the key's own engine {@code e} was passed over, as {@link Decision#reason()} says it. */
    private String passedOver(ClassRoute k, int e, long now) {
        EngineCell cell = k.cells[e];
        return cell.ejected(now) ? "skip:ejected" : cell.inFlight.get() >= k.limit(cell) ? "skip:limit" : "spill:bounded-load";
    }

    /**
     * Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2018): capacity ⌈(1+ε)·μ⌉ for
     * μ = share·(m+1), m requests in flight in the engine's pool, counting the one being placed; never less than μ
     * plus {@link #NOISE_SIGMAS} standard deviations of a Poisson count of mean μ, which is how far an engine's count
     * strays from its share when keys are hashed and nothing is wrong (docs/request-path.md §4).
     */
    private boolean withinBound(ClassRoute k, int inFlight, double share) {
        if (inFlight < minInFlight) {
            return true;
        }
        return withinMean(inFlight + 1, share * (k.pool.inFlight.get() + 1));
    }

    /** Whether {@code count} is within bounded load of {@code mean}: see {@link #withinBound}. */
    private boolean withinMean(double count, double mean) {
        return count <= Math.ceil(loadFactor * mean) || count <= Math.ceil(mean + NOISE_SIGMAS * Math.sqrt(mean));
    }

    /**
     * Standard deviations of a Poisson count or rate that are read as chance, not load: how far bounded load lets an
     * engine's requests in flight exceed its share, and how far an offered rate may exceed its allowance before it
     * spills ({@link #excess}). Three keeps chance from tripping either on more than about one check in a
     * thousand.
     */
    static final double NOISE_SIGMAS = 3;

    /**
     * Places a request on {@code cell}, one of {@code k}'s engines, if it is below the class's concurrency limit:
     * counts it in flight there, in the class's pool and in the total. False, counting nothing, at the limit.
     */
    private boolean acquire(ClassRoute k, EngineCell cell) {
        if (!cell.tryAcquire(k.limit(cell))) {
            return false;
        }
        totalInFlight.incrementAndGet();
        k.pool.inFlight.incrementAndGet();
        return true;
    }

    /** Undoes an {@link #acquire} of {@code cell} whose attempt was not sent. */
    private void unacquire(ClassRoute k, EngineCell cell) {
        cell.inFlight.decrementAndGet();
        totalInFlight.decrementAndGet();
        k.pool.inFlight.decrementAndGet();
    }

    private Pool pool(String name) {
        return pools.computeIfAbsent(name, x -> new Pool());
    }

    /**
     * Walks the key's order: the first engine that is not excluded, not ejected (for a retry, not failing
     * either: its last attempt did not fail), within its bounded load and below the concurrency limit;
     * else the least loaded (relative to its share) of the first {@code maxWalk} usable ones; else any
     * usable engine further on; else, if every engine is ejected or failing, the first one below the limit
     * (ejection must not leave a class with nothing).
     */
    private int walk(ClassRoute k, long key, EngineCell[] exclude, long now) {
        KeyOrder t = k.table;
        int len = t.probeLength();
        int distinct = 0;
        int budget = Math.min(t.orderLength(), options.maxWalk() + (exclude == null ? 0 : exclude.length));
        int best = -1;
        double bestRatio = Double.POSITIVE_INFINITY;
        int panic = -1;
        boolean sawHealthy = false;
        double inRotation = -1; // shareInRotation, read when first needed
        int i = 0;
        for (; i < len && distinct < budget; i++) {
            int e = t.probe(key, i);
            if (t.repeats(key, i, e)) {
                continue;
            }
            distinct++;
            EngineCell cell = k.cells[e];
            if (exclude != null && ClassRoute.indexOf(exclude, cell) >= 0) {
                continue;
            }
            if (outOfTheRunning(cell, exclude != null, now)) {
                if (panic < 0 && cell.inFlight.get() < k.limit(cell)) {
                    panic = e;
                }
                continue;
            }
            sawHealthy = true;
            int inFlight = cell.inFlight.get();
            if (inFlight >= k.limit(cell)) {
                continue;
            }
            if (withinBound(k, inFlight, k.share[e]) || withinBound(k, inFlight, k.share[e] / (inRotation < 0
                    ? inRotation = shareInRotation(k, now) : inRotation))) {
                if (acquire(k, cell)) {
                    return e;
                }
            }
            double ratio = (inFlight + 1) / k.share[e];
            if (ratio < bestRatio) {
                best = e;
                bestRatio = ratio;
            }
        }
        if (best >= 0 && acquire(k, k.cells[best])) {
            return best;
        }
        for (; i < len; i++) {
            int e = t.probe(key, i);
            if (t.repeats(key, i, e)) {
                continue;
            }
            EngineCell cell = k.cells[e];
            if (exclude != null && ClassRoute.indexOf(exclude, cell) >= 0) {
                continue;
            }
            if (outOfTheRunning(cell, exclude != null, now)) {
                if (panic < 0 && cell.inFlight.get() < k.limit(cell)) {
                    panic = e;
                }
                continue;
            }
            sawHealthy = true;
            if (acquire(k, cell)) {
                return e;
            }
        }
        if (!sawHealthy && panic >= 0 && acquire(k, k.cells[panic])) {
            return panic;
        }
        return -1;
    }

    /**
     * The fallback policy: in the nearest group (same RTT, healthy first) the engine with the fewest
     * requests in flight that is not excluded, not ejected and below the limit; then the next group.
     * If every engine is ejected, the nearest one below the limit.
     */
    private int pickNear(ClassRoute k, EngineCell[] exclude, long now) {
        int best = pickNearest(k, exclude, now, false);
        if (best >= 0 || !allEjectedOrExcluded(k.near, exclude, now)) {
            return best;
        }
        for (int i = 0; i < k.near.length; i++) {
            EngineCell cell = k.near[i];
            if ((exclude == null || ClassRoute.indexOf(exclude, cell) < 0) && acquire(k, cell)) {
                return i;
            }
        }
        return -1;
    }

    private static boolean failing(EngineCell cell, long now) {
        return cell.ejected(now) || cell.failures.get() > 0;
    }

    /** Whether {@code cell} is passed over: ejected, or for a retry failing too (a retry passes over failing ones). */
    private static boolean outOfTheRunning(EngineCell cell, boolean retry, long now) {
        return retry ? failing(cell, now) : cell.ejected(now);
    }

    /**
     * In the nearest group of the class's allowed engines, the one with the fewest requests in flight that is
     * not excluded, not ejected (nor failing, if {@code avoidFailing}) and below the limit; then the next
     * group; -1 if none. A retry's spill-over uses it with {@code avoidFailing}.
     */
    private int pickNearest(ClassRoute k, EngineCell[] exclude, long now, boolean avoidFailing) {
        EngineCell[] near = k.near;
        for (int g = 0; g < near.length; ) {
            int end = k.nearGroupEnd[g];
            int best = -1;
            int bestInFlight = Integer.MAX_VALUE;
            for (int i = g; i < end; i++) {
                EngineCell cell = near[i];
                int inFlight = cell.inFlight.get();
                if (inFlight < bestInFlight && inFlight < k.limit(cell)
                        && !outOfTheRunning(cell, avoidFailing, now)
                        && (exclude == null || ClassRoute.indexOf(exclude, cell) < 0)) {
                    best = i;
                    bestInFlight = inFlight;
                }
            }
            if (best >= 0 && acquire(k, near[best])) {
                return best;
            }
            g = end;
        }
        return -1;
    }

    private static boolean allEjectedOrExcluded(EngineCell[] cells, EngineCell[] exclude, long now) {
        for (EngineCell c : cells) {
            if (!c.ejected(now) && (exclude == null || ClassRoute.indexOf(exclude, c) < 0)) {
                return false;
            }
        }
        return true;
    }

    @Override
    public Decision retry(Decision failed, Outcome outcome) {
        if (failed == null || !failed.routed()) {
            throw new IllegalArgumentException("failed: " + failed + " (expected: a routed decision)");
        }
        onFinish(failed, outcome, -1);
        Compiled c = compiled;
        long version = c.snapshot.version();
        if (!outcome.retryable()) {
            return Decision.refused(failed.classId(), version, failed.fallback(), Refusal.NOT_RETRYABLE,
                    "not retried: the engine's answer was " + outcome, 0);
        }
        if (failed.attempt() >= options.maxAttempts()) {
            return Decision.refused(failed.classId(), version, failed.fallback(), Refusal.ATTEMPTS_EXHAUSTED,
                    "gave up after " + failed.attempt() + " attempts (last: " + outcome + ")", 0);
        }
        ClassRoute k = c.byId.get(failed.classId());
        if (k == null || !k.hasAllowedEngine()) {
            return Decision.refused(failed.classId(), version, failed.fallback(), Refusal.NO_ALLOWED_ENGINE,
                    "class '" + failed.classId() + "' has no allowed engine in snapshot " + version,
                    unavailableRetryAfterNanos);
        }
        long now = ticker.nanos();
        // A connection that was never made put no load on any engine, so its retry (a "requeue") spends no
        // token: a dead engine's refused connections must not drain the budget that protects live engines.
        // The attempt limit still bounds it.
        boolean requeue = outcome == Outcome.CONNECT_ERROR;
        if (!requeue && !k.retryTokens.trySpend(now)) {
            return Decision.refused(k.id, version, failed.fallback(), Refusal.RETRY_BUDGET_EXHAUSTED,
                    "not retried: the gateway's retry budget is spent (last: " + outcome + ")",
                    shedRetryAfterNanos);
        }
        EngineCell[] tried = failed.triedSoFar();
        boolean stale = stale(c, now);
        int attempt = failed.attempt() + 1;
        boolean nearOnly = stale && k.table == null; // no weights to follow: nearest, fewest in flight
        if (outcome == Outcome.NOT_SENT) {
            // the engine closed a connection it had kept open, before it could read the request: nothing is wrong
            // with it, and it holds the conversation's cache, so it gets the request again at once if it still may
            Decision again = sameEngineAgain(k, version, failed, nearOnly, stale, attempt, outcome, now);
            if (again != null) {
                return again;
            }
        }
        boolean nearest = nearOnly; // whether i indexes the nearest-first arrays or the route's
        EngineCell[] cellsOf = nearOnly ? k.near : k.cells;
        String how = nearOnly ? "nearest" : "key";
        int i = nearOnly ? pickNear(k, tried, now) : k.table == null ? -1 : pickHashed(k, failed.key, -1, tried, now);
        if (!nearOnly && (i < 0 || failing(k.cells[i], now))) {
            // Every engine the route weights is tried, ejected or failing (a whole engine cluster down, say):
            // spill to the nearest healthy allowed engine outside them rather than fail or hit a failing one.
            int spill = pickNearest(k, tried, now, true);
            if (spill >= 0) {
                if (i >= 0) {
                    unacquire(k, k.cells[i]);
                }
                i = spill;
                nearest = true;
                cellsOf = k.near;
                how = "nearest-healthy";
            }
        }
        if (!nearest && i >= 0) {
            // a retry needs a home as a first attempt does: it counts toward the offered rate of the engine its key's
            // order gives it, and spills as a first attempt would when that engine is offered beyond its allowance
            // (the share of a dead engine that the cap of ejections keeps in rotation lands here, on top of its own)
            double excess = excess(k.cells[i], k.enginePriority[i], k.allowanceRps[i], k.plannedMs[i], now);
            if (excess > 0 && Hashing.unit(Hashing.mix(failed.key ^ Hashing.SPILL_SALT)) < excess) {
                int s = spill(k, i, failed.key, false, tried, false, now);
                if (s >= 0) {
                    unacquire(k, k.cells[i]);
                    spills.increment();
                    i = s;
                    nearest = true;
                    cellsOf = k.near;
                    how = "spill:overload";
                }
            }
        }
        long backoff = 0;
        if (i < 0) {
            // Nothing else left: the same engine again, if still allowed and not ejected, after a
            // full-jitter back-off (Brooker 2015): uniform in [0, min(max, base·2^(attempt−2))].
            int same = ClassRoute.indexOf(cellsOf, failed.cell);
            if (same >= 0 && !failed.cell.ejected(now) && acquire(k, failed.cell)) {
                i = same;
                how = "same-engine";
                long cap = Math.min(backoffMaxNanos, backoffBaseNanos << Math.min(30, attempt - 2));
                backoff = (long) (cap * Hashing.unit(Hashing.mix(failed.requestId ^ Hashing.JITTER_SALT
                        ^ options.seed() + attempt * Hashing.GOLDEN)));
            }
        }
        if (i < 0) {
            if (!requeue) {
                k.retryTokens.refund();
            }
            return Decision.refused(k.id, version, stale, Refusal.NO_ENGINE_LEFT, "no allowed engine left to retry"
                    + " on (tried " + tried.length + ", others ejected or at their limit; last: " + outcome + ")",
                    unavailableRetryAfterNanos);
        }
        EngineCell[] nowTried = tried;
        if (cellsOf[i] != failed.cell) {
            nowTried = java.util.Arrays.copyOf(tried, tried.length + 1);
            nowTried[tried.length] = cellsOf[i];
        }
        return prefixes.count(Decision.routed(k.id, version, stale, cellsOf[i],
                nearest ? k.nearEndpoints[i] : k.endpoints[i], nearest ? k.nearEnginePriority[i] : k.enginePriority[i],
                attempt, backoff, failed.key, failed.requestId, nearest ? k.nearExpectedTtftMs[i] : k.expectedTtftMs[i],
                nowTried, k.pool, now, "retry:" + outcome.word() + "," + how), failed.prefixCell);
    }

    /**
     * {@code failed}'s engine once more, without a back-off, when it is still among the class's engines, not ejected
     * and below its limit; null otherwise.
     */
    private Decision sameEngineAgain(ClassRoute k, long version, Decision failed, boolean nearOnly, boolean stale,
                                     int attempt, Outcome outcome, long now) {
        EngineCell[] cellsOf = nearOnly ? k.near : k.cells;
        int same = ClassRoute.indexOf(cellsOf, failed.cell);
        if (same < 0 || failed.cell.ejected(now) || !acquire(k, failed.cell)) {
            return null;
        }
        return prefixes.count(Decision.routed(k.id, version, stale, failed.cell,
                nearOnly ? k.nearEndpoints[same] : k.endpoints[same],
                nearOnly ? k.nearEnginePriority[same] : k.enginePriority[same], attempt, 0, failed.key, failed.requestId,
                nearOnly ? k.nearExpectedTtftMs[same] : k.expectedTtftMs[same], failed.triedSoFar(), k.pool, now,
                "retry:" + outcome.word() + ",same-engine"), failed.prefixCell);
    }

    @Override
    public void onFirstToken(Decision attempt, long ttftNanos) {
        if (attempt != null && attempt.routed()) {
            if (attempt.cell.trialOnReturn) {
                attempt.cell.endTrial(true);
            }
            if (attempt.firstTokenCame()) {
                attempt.cell.firstTokens++; // racy on purpose: only whether it moves is read
                attempt.cell.reachedByAttemptAt = attempt.startNanos;
                if (ttftNanos >= 0 && attempt.readFirstToken()) {
                    attempt.cell.observeFirstToken(ttftNanos / 1e6, attempt.enginePriority());
                }
            }
        }
    }

    @Override
    public long awaitingFirstToken(Decision attempt) {
        if (attempt == null || !attempt.routed() || !attempt.stillAwaiting()) {
            return -1;
        }
        double boundMs = options.ttftOutlierFactor() * attempt.expectedTtftMs;
        if (!(boundMs > 0) || Double.isInfinite(boundMs)) {
            return -1;
        }
        long waited = ticker.nanos() - attempt.startNanos;
        long bound = (long) Math.ceil(boundMs * 1e6);
        if (waited <= bound) {
            return bound - waited + 1; // an outlier waits beyond the bound
        }
        EngineCell cell = attempt.cell;
        if (cell.firstTokens != attempt.firstTokensBefore) {
            // the engine sent a first token since: it works, only slowly or behind a queue, and this answer's own TTFT
            // is judged when it comes; nothing from it at all is what a hung engine looks like
            return -1;
        }
        double waitedMs = waited / 1e6;
        if (ttftOutlier(attempt, cell, waitedMs)) {
            stall(attempt, cell, waitedMs, "none from the engine meanwhile");
            return -1;
        }
        return waited; // when it has waited twice as long: its peers may have slowed too, or its load gone
    }

    @Override
    public void onFinish(Decision attempt, Outcome outcome, long ttftNanos) {
        if (attempt == null || !attempt.routed() || !attempt.finish()) {
            return;
        }
        EngineCell cell = attempt.cell;
        if (cell.trialOnReturn) {
            // back in full on what its ejection doubted: an answer from one that could not be reached, a success from
            // one that failed every attempt
            cell.endTrial(cell.ejectedFor == EngineCell.UNREACHABLE
                    ? outcome != Outcome.CONNECT_ERROR && outcome != Outcome.NOT_SENT : outcome == Outcome.SUCCESS);
        }
        cell.inFlight.decrementAndGet();
        totalInFlight.decrementAndGet();
        attempt.pool.inFlight.decrementAndGet();
        prefixes.release(attempt.prefixCell);
        // an engine planned knowing that a share of its attempts fail: its server errors are the retries the plan
        // accepted, not a reason to eject it
        boolean priced = outcome == Outcome.SERVER_ERROR && cell.errorsExpected;
        if (outcome.failure()) {
            cell.failedAt = ticker.nanos(); // a rare path: one clock read per failed attempt
        }
        if (outcome.failure() && !priced) {
            // the run's latest failure says what the engine is now: a connection that cannot be made after it answered
            // or hung (a crash cuts the requests it holds, then refuses the next ones) says it cannot be reached
            if (outcome == Outcome.CONNECT_ERROR) {
                cell.reached = false;
                cell.timedOut = false;
            } else {
                cell.reached = true;
                if (outcome == Outcome.TIMEOUT) {
                    cell.timedOut = true;
                }
            }
            failed(cell, outcome.toString(), false);
        } else if (outcome == Outcome.CANCELLED && ttftNanos < 0 && ttftNanos != NOT_STREAMED) {
            // the client gave up before the first token: its TTFT is at least what it waited, and a wait beyond the
            // outlier bound is a slow answer as surely as one that came that late; otherwise a hung engine whose
            // clients time out before the gateway does is never ejected, every one of its requests a 499
            double waitedMs = (ticker.nanos() - attempt.startNanos) / 1e6;
            if (!attempt.stalled() && ttftOutlier(attempt, cell, waitedMs)) {
                stall(attempt, cell, waitedMs, "when the client went away");
            }
        } else if (outcome == Outcome.SUCCESS) {
            double expected = attempt.expectedTtftMs;
            double factor = options.ttftOutlierFactor();
            double ttftMs = ttftNanos / 1e6;
            // an attempt whose wait was counted while it lasted (stalled) counts once, and as a slow answer it resets
            // nothing
            boolean stalled = attempt.stalled();
            if (!stalled && ttftNanos >= 0 && ttftOutlier(attempt, cell, ttftMs)) {
                failed(cell, "TTFT " + Math.round(ttftMs) + " ms > " + factor + " × expected "
                        + Math.round(expected) + " ms", true);
            } else if (!stalled && cell.failures.get() != 0) {
                cell.resetFailures();
            }
            if (ttftNanos >= 0) {
                cell.observeTtft(ttftMs, attempt.enginePriority());
                if (attempt.readFirstToken()) {
                    cell.observeFirstToken(ttftMs, attempt.enginePriority()); // no first token was told as it came
                }
            }
            // one answer in four: a clock read is a tenth of this path
            if ((attempt.requestId & DURATION_SAMPLE) == 0) {
                long now = ticker.nanos();
                cell.observeDuration((now - attempt.startNanos) / 1e6, attempt.enginePriority());
                if (cell.answers.behindThePlan()) {
                    slowAnswers(attempt, cell, now);
                }
            }
        }
    }

    /**
     * How many times the held plan's duration, and its peers' against theirs, an engine's answers take before it is
     * ejected for slowness while the control plane is silent ({@link #slowAnswers}): more than the
     * {@link QueueSignal#BEHIND_THE_PLAN} that starts a spill, since an ejection moves every conversation the engine
     * holds and their caches, where a spill moves only an excess.
     */
    static final double SLOW_ANSWERS = 2;

    /**
     * While the control plane is silent, an engine whose answers from here take {@link #SLOW_ANSWERS} times the held
     * plan's duration, and that many times what its peers' take against theirs, while it is offered no more than its
     * plan from here, is slow: ejected for slowness (under the cap, and only where the others in rotation have room
     * for its plan, {@link #tryEject}). A slowed engine's pace alone would move only what it cannot serve
     * ({@link #excess}); what it still serves decodes that many times slower, where the peers have room to serve it at
     * the plan's pace (docs/request-path.md §4, "An engine slow in its answers"). A rare path: only answers behind the
     * plan reach it.
     */
    private void slowAnswers(Decision attempt, EngineCell cell, long now) {
        Compiled c = compiled;
        ClassRoute k = c.byId.get(attempt.classId());
        int i = k == null ? -1 : ClassRoute.indexOf(k.cells, cell);
        if (i < 0 || cell.ejected(now) || !silent(c, now)) {
            return;
        }
        // the plan's duration is the latency at the planned load: offered beyond its plan from here (by more than
        // chance), an engine is expected to answer later than that, and its slowness is its load
        double planned = k.plannedRps[i];
        if (cell.offeredRps(now) > planned + NOISE_SIGMAS * Math.sqrt(planned / EngineCell.RATE_WINDOW_S)) {
            return;
        }
        double slow = cell.answers.slowness();
        double peers = peersMedian(k, cell, now, other -> other.answers.slowness());
        if (Double.isNaN(peers)) {
            return; // no peer to tell its pace from the class's load
        }
        if (slow >= SLOW_ANSWERS * Math.max(1, peers)) {
            tryEject(cell, String.format(java.util.Locale.ROOT, "answers %.1f × the held plan's %d ms (its peers "
                    + "%.1f ×) while the control plane is away", slow, Math.round(cell.plannedDurationMs), peers),
                    EngineCell.SLOW, true);
        }
    }

    // ---------------------------------------------------------------- outlier ejection (failure path)

    /**
     * Counts {@code attempt}, still without its first token after {@code waitedMs}, as one slow answer of {@code cell},
     * once ({@link Decision#stalled()}); {@code when} says what the wait was seen with.
     */
    private void stall(Decision attempt, EngineCell cell, double waitedMs, String when) {
        if (attempt.stall()) {
            failed(cell, "no first token after " + Math.round(waitedMs) + " ms, " + when + " > "
                    + options.ttftOutlierFactor() + " × expected " + Math.round(attempt.expectedTtftMs) + " ms", true);
        }
    }

    /**
     * Whether a first token {@code ttftMs} after the attempt's start (or not yet there after that long) makes it a latency
     * outlier: beyond the factor times its expected TTFT, beyond the factor times its peers' recent TTFT, and the engine
     * not offered more than its plan.
     */
    private boolean ttftOutlier(Decision attempt, EngineCell cell, double ttftMs) {
        double expected = attempt.expectedTtftMs;
        double factor = options.ttftOutlierFactor();
        return factor > 0 && expected > 0 && ttftMs > factor * expected
                && !(ttftMs <= factor * peersTtftMs(attempt.classId(), cell))
                && !offeredBeyondPlan(attempt.classId(), cell);
    }

    /**
     * True when {@code cell} is offered more than its allowance in class {@code classId}'s route (what the policy
     * sends it from here plus its planned spare capacity): an engine slow because it is loaded beyond the plan is not
     * an outlier, and ejecting it would only load the others more.
     */
    private boolean offeredBeyondPlan(String classId, EngineCell cell) {
        ClassRoute k = classId == null ? null : compiled.byId.get(classId);
        int i = k == null ? -1 : ClassRoute.indexOf(k.cells, cell);
        return i >= 0 && cell.offeredRps(ticker.nanos()) > k.allowanceRps[i];
    }

    /**
     * The median recent TTFT of the other engines of class {@code classId} that are not ejected and have answered,
     * ms; NaN when there are none. An answer slower than the profile predicts is an outlier only if it is also
     * slower than its peers by the same factor: when every engine of the class is slow (the whole fleet loaded,
     * long prompts), no engine is to blame and none is ejected for it. Called only for answers already slower than
     * the profile's factor, a rare path.
     */
    private double peersTtftMs(String classId, EngineCell self) {
        ClassRoute k = classId == null ? null : compiled.byId.get(classId);
        if (k == null) {
            return Double.NaN;
        }
        return peersMedian(k, self, ticker.nanos(), c -> c.answers.recentTtftMs);
    }

    /**
     * The median of {@code value} over {@code k}'s engines other than {@code self} that are not ejected at {@code now}
     * and have one (not NaN); NaN when none has. What an engine is judged against, so that a class whose every engine
     * is slow blames none of them. A rare path.
     */
    private static double peersMedian(ClassRoute k, EngineCell self, long now,
                                      java.util.function.ToDoubleFunction<EngineCell> value) {
        double[] seen = new double[k.cells.length];
        int n = 0;
        for (EngineCell c : k.cells) {
            double v = value.applyAsDouble(c);
            if (c != self && !Double.isNaN(v) && !c.ejected(now)) {
                seen[n++] = v;
            }
        }
        if (n == 0) {
            return Double.NaN;
        }
        java.util.Arrays.sort(seen, 0, n);
        return n % 2 == 1 ? seen[n / 2] : (seen[n / 2 - 1] + seen[n / 2]) / 2;
    }

    /** {@code slow}: the failure was a latency outlier (the engine answered), not an error or a timeout. */
    private void failed(EngineCell cell, String what, boolean slow) {
        if (!slow) {
            cell.failedHard = true;
        } else {
            cell.reached = true;
        }
        int n = cell.failures.incrementAndGet();
        if (n == 1) {
            cell.runSince = ticker.nanos(); // a failure path: a clock read is cheap beside it
        }
        if (n >= options.consecutiveFailures()) {
            // for slowness only when no failure of the run was an error: an engine refused for thousands of
            // connections whose last failure is a slow answer (it was just restarted) is not merely slow
            tryEject(cell, n + " consecutive failures (last: " + what + ")", !cell.failedHard ? EngineCell.SLOW
                    : cell.timedOut ? EngineCell.HUNG : cell.reached ? EngineCell.FAILING : EngineCell.UNREACHABLE);
        }
    }

    /**
     * Marks {@code cell}, just ejected because it could not be reached or, past the cap, because it failed every
     * attempt, half open on its return: one trial attempt at a time, and the next failure completes a run of {@code run} that ejects it again.
     * {@code reached}: the run is of failures that reached the engine. Called holding the ejection flag.
     */
    private void halfOpen(EngineCell cell, int run, boolean reached) {
        cell.resetFailures();
        cell.failures.set(Math.max(0, run - 1));
        cell.runSince = ticker.nanos(); // what the gateway saw before this ejection is no evidence for the next
        cell.failedHard = true;
        cell.reached = reached;
        cell.trialOnReturn = true;
        cell.trialUntil.set(0);
    }

    /** An ejection of {@code cell} past the cap of ejected engines, for {@link #UNREACHABLE_RECHECK_NANOS}. */
    private static Ejection pastTheCap(EngineCell cell, String reason, long now) {
        return new Ejection(cell.id, reason + ", tried again in " + UNREACHABLE_RECHECK_NANOS / 1_000_000_000L + " s",
                now, now + UNREACHABLE_RECHECK_NANOS, cell.multiplier);
    }

    /**
     * Consecutive failures, each one reaching the engine, that say it fails every attempt rather than often: twice
     * the run that ejects under the cap. An engine that fails fewer than half of its attempts, which the control loop
     * may plan as capacity of last resort (docs/control-loop.md), has such a run about once in 2^(n+1) attempts.
     */
    private int failsEveryAttempt() {
        return 2 * options.consecutiveFailures();
    }

    /**
     * How long an engine that could not be reached stays ejected past the cap before a request tries it again: about a
     * health check's interval (Envoy's and Kubernetes' probes run every 5 to 10 s). Short, because past the cap the
     * engines left may be few; a failed connection after it ejects the engine again at once.
     */
    static final long UNREACHABLE_RECHECK_NANOS = 5_000_000_000L;

    /**
     * Whether ejecting {@code cell} leaves at least half of the allowed engines of every class it serves in rotation
     * (Envoy's panic threshold, over the allowed engines rather than the weighted ones: a class whose weighted engines
     * are all unreachable is served by the nearest healthy ones). Below it a failure to connect may be this gateway's
     * own (its descriptors spent, its network down for a moment), unless the engines left answer attempts begun since
     * ({@link #othersReachedSince}).
     */
    private static boolean halfStayInRotation(Compiled c, EngineCell cell, long now) {
        return inRotation(c, cell, now, false);
    }

    /**
     * Whether, in every class {@code cell} serves, another engine in rotation sent its first bytes for an attempt this
     * gateway began since {@code cell}'s run of failed connections did: this gateway reaches the class's engines, so
     * its failures to connect to {@code cell} are {@code cell}'s or its link's, not the gateway's own (its network
     * down fails every attempt alike; with its descriptors spent, the engines it holds pooled connections to still
     * answer, and sending the requests there is right). Then an engine that cannot be reached is ejected past
     * half of the allowed engines too: with most of them gone from here, each request tried on them would fail up to
     * its attempts on failed connections, and a cut link makes each of those a whole connect timeout.
     */
    private static boolean othersReachedSince(Compiled c, EngineCell cell, long now) {
        return inRotation(c, cell, now, true);
    }

    /**
     * {@link #halfStayInRotation} ({@code reached} false) or {@link #othersReachedSince} ({@code reached} true): over
     * the classes {@code cell} serves, what of their allowed engines besides it stays in rotation.
     */
    private static boolean inRotation(Compiled c, EngineCell cell, long now, boolean reached) {
        for (ClassRoute k : c.byId.values()) {
            if (ClassRoute.indexOf(k.cells, cell) < 0 && ClassRoute.indexOf(k.near, cell) < 0) {
                continue;
            }
            int in = 0;
            int answered = 0;
            for (EngineCell n : k.near) {
                if (n != cell && !n.ejected(now)) {
                    in++;
                    if (n.reachedByAttemptAt >= cell.runSince) {
                        answered++;
                    }
                }
            }
            if (reached ? answered == 0 : 2 * in < k.near.length) {
                return false;
            }
        }
        return true;
    }

    /**
     * Ejects {@code cell} unless a class it serves is at its cap of ejected engines. At the cap an engine takes the
     * place of one ejected for a lesser harm ({@code severity}, {@link EngineCell#ejectedFor}): one that fails
     * (errors, refused connections) that of one ejected only for slowness, since a slow engine still answers and a
     * failing one only costs retries; one that hangs (timeouts) that of one that fails fast, since each request sent
     * to a hung engine waits the whole timeout where a fast failure costs a retry. The displaced one returns at once,
     * its failures counted afresh.
     */
    private void tryEject(EngineCell cell, String reason, int severity) {
        tryEject(cell, reason, severity, false);
    }

    /**
     * As {@link #tryEject(EngineCell, String, int)}; {@code slowWhileAway}: an engine slow in its answers while the
     * control plane is away ({@link #slowAnswers}), which at the cap is ejected past it where half the allowed
     * engines stay in rotation: its peers answer at their pace and have room for its plan, so the ejection moves no
     * load the cap guards against, and no control plane will price it meanwhile.
     */
    private void tryEject(EngineCell cell, String reason, int severity, boolean slowWhileAway) {
        if (!ejecting.compareAndSet(false, true)) {
            return; // another thread is deciding; this engine's next failure tries again
        }
        Ejection e = null;
        List<Ejection> displaced = List.of();
        try {
            long now = ticker.nanos();
            if (cell.ejected(now)) {
                return;
            }
            Compiled c = compiled;
            if (severity == EngineCell.UNREACHABLE) {
                boolean half;
                // under the cap where there is room, as an engine that fails fast; past it while half the allowed
                // engines stay in rotation, or while those left answer attempts begun since its run began
                e = underTheCap(c, cell, reason, EngineCell.FAILING, now, displaced = new ArrayList<>(1));
                if (e != null) {
                    halfOpen(cell, options.consecutiveFailures(), false);
                } else if ((half = halfStayInRotation(c, cell, now)) || othersReachedSince(c, cell, now)) {
                    // past the cap: its requests go elsewhere anyway, each after a failed connection (a connect
                    // timeout, where the link is cut), so ejecting it moves no load the cap guards against
                    e = pastTheCap(cell, reason + "; cannot be reached: ejected past the cap of ejected engines"
                            + (half ? "" : " while the engines left in rotation answer from here"), now);
                    halfOpen(cell, options.consecutiveFailures(), false);
                    eject(cell, e, severity, true);
                }
                severity = EngineCell.FAILING;
            } else if (severity != EngineCell.SLOW || othersTakeItsPlan(c, cell, now)) {
                e = underTheCap(c, cell, reason, severity, now, displaced = new ArrayList<>(1));
                if (e == null && severity == EngineCell.FAILING && cell.failures.get() >= failsEveryAttempt()
                        && halfStayInRotation(c, cell, now) && othersReachedSince(c, cell, now)) {
                    // past the cap: it fails every attempt while the engines left answer from here, so its requests
                    // go elsewhere anyway, each after a failure and, while the retry budget lasts, a retry
                    e = pastTheCap(cell, reason + "; fails every attempt while the engines left in rotation answer "
                            + "from here: ejected past the cap of ejected engines", now);
                    halfOpen(cell, failsEveryAttempt(), true);
                    eject(cell, e, severity, true);
                } else if (e == null && slowWhileAway && halfStayInRotation(c, cell, now)) {
                    e = backedOff(cell, reason + "; its peers answer at their pace and have room for its plan: "
                            + "ejected past the cap of ejected engines", now);
                    eject(cell, e, severity, true);
                }
            }
        } finally {
            ejecting.set(false);
        }
        if (e == null) {
            return;
        }
        for (Ejection d : displaced) {
            options.listener().onEjectionEnded(d, "its place went to " + cell.id + (severity == EngineCell.HUNG
                    ? ", which hangs rather than fails fast" : ", which fails rather than answers slowly")
                    + ", at the cap of ejected engines");
        }
        options.listener().onEjection(e);
    }

    /**
     * Whether, in every class {@code cell} serves, the class's other engines in rotation have the room to take what the
     * policy sends {@code cell} from this gateway: what ejecting it would move onto them. Their room is each one's
     * capacity less all the load the plan puts on it (as the spill fills an engine, {@link #holds}), not its effective
     * capacity: the headroom the plan holds back is the reserve for a fault, and an engine several times slow is one. An
     * engine that is slow but still answers, whose share of the plan its peers cannot carry even so, stays: ejecting it
     * would queue its load on engines that cannot serve it, and the control plane, which prices a slow engine, moves it
     * instead. Its failures stay counted. (An engine rated above what it serves queues within its allowance and looks
     * slow: ejected with most of a gateway's plan, it left a cheaper engine a queue of hundreds, docs/request-path.md
     * §4.)
     */
    private static boolean othersTakeItsPlan(Compiled c, EngineCell cell, long now) {
        for (ClassRoute k : c.byId.values()) { // a rare path: scanning every class is fine
            int i = ClassRoute.indexOf(k.cells, cell);
            if (i < 0) {
                continue;
            }
            double room = 0;
            for (int m = 0; m < k.cells.length; m++) {
                if (m != i && !k.cells[m].ejected(now)) {
                    room += roomToCapacity(k, m);
                }
            }
            if (k.plannedRps[i] > room) {
                return false;
            }
        }
        return true;
    }

    /**
     * Requests per second {@code k}'s engine {@code m} can take from this gateway beyond its plan: its capacity less
     * all the load the plan puts on it, or, where its capacity is not known, its allowance less its plan from here.
     */
    private static double roomToCapacity(ClassRoute k, int m) {
        int n = k.nearOf[m];
        if (n >= 0 && k.nearCapacityRps[n] > 0) {
            return Math.max(0, k.nearCapacityRps[n] - k.nearOthersRps[n] - k.plannedRps[m]);
        }
        return Math.max(0, k.allowanceRps[m] - k.plannedRps[m]);
    }

    /**
     * The ejection of {@code cell} under the cap of ejected engines of every class it serves, or null when a class is
     * at its cap and holds no engine ejected for a lesser harm than {@code severity}; the ejections it ends to make room
     * go to {@code displaced}. Called holding the ejection flag.
     */
    private Ejection underTheCap(Compiled c, EngineCell cell, String reason, int severity, long now,
                                 List<Ejection> displaced) {
        List<EngineCell> makeRoom = new ArrayList<>(1);
        for (ClassRoute k : c.byId.values()) { // a rare path: scanning every class is fine
            if (ClassRoute.indexOf(k.cells, cell) < 0) {
                continue;
            }
            int under = ejectedIn(k, now, false) - freedIn(k, makeRoom);
            if (under + 1 <= k.maxEjected && under + ejectedIn(k, now, true) + 1 < k.cells.length) {
                continue;
            }
            EngineCell lesser = ejectedForLess(k, severity, now);
            if (lesser == null) {
                return null; // the class's cap: it keeps its engines, failures stay counted
            }
            makeRoom.add(lesser);
        }
        for (EngineCell s : makeRoom) {
            displaced.add(s.endEjection(now));
        }
        String instead = displaced.isEmpty() ? "" : "; in place of " + String.join(", ",
                displaced.stream().map(Ejection::engineId).toList()) + " (ejected for "
                + (severity == EngineCell.HUNG ? "failing fast" : "slowness only") + ")";
        Ejection e = backedOff(cell, reason + instead, now);
        eject(cell, e, severity, false);
        return e;
    }

    /**
     * An ejection of {@code cell} for the base interval times k, k one more than its last ejection's less one for every
     * base interval it stayed in since (capped, with jitter); its failures are counted afresh.
     */
    private Ejection backedOff(EngineCell cell, String reason, long now) {
        int k = cell.multiplier;
        if (cell.ejections > 0 && now - cell.lastEjectionEnd > 0) {
            // k decays by one for every base interval the engine stayed healthy since.
            long healthy = (now - cell.lastEjectionEnd) / ejectionBaseNanos;
            k = (int) Math.max(0, k - healthy);
        }
        k++;
        double u = Hashing.unit(Hashing.mix(options.seed() ^ Hashing.JITTER_SALT ^ Keys.of(cell.id)
                + cell.ejections * Hashing.GOLDEN));
        long base = Math.min(ejectionMaxNanos, ejectionBaseNanos * k);
        long duration = Math.min(ejectionMaxNanos, (long) (base * (1 + options.ejectionJitter() * u)));
        cell.multiplier = k;
        cell.resetFailures();
        return new Ejection(cell.id, reason, now, now + duration, k);
    }

    /** Puts {@code cell} under ejection {@code e}, for harm {@code severity}. Called holding the ejection flag. */
    private static void eject(EngineCell cell, Ejection e, int severity, boolean pastTheCap) {
        cell.resetSlowness();
        cell.ejectedFor = severity;
        cell.pastTheCap = pastTheCap;
        cell.lastEjectionEnd = e.untilNanos();
        cell.ejections++;
        cell.ejection = e;
    }

    /**
     * Ends the ejections the new snapshot {@code c} overrules, each with its reason (a rare path: only on a swap):
     * <ul>
     * <li>for failing (errors, not timeouts), of the engines it plans knowing that a share of their attempts fail
     * ({@link EngineCell#errorsExpected}): the control plane, which sees every gateway's outcomes, chose to keep them
     * as capacity of last resort, and this gateway's run of their errors is what it priced;
     * <li>for slowness only, of the engines it sends more from this gateway than the others in rotation have the spare
     * capacity to take ({@link #othersTakeItsPlan}): kept out, the plan's load on it would queue on engines planned
     * for less. The control plane, which prices a slow engine, planned it so after the gateways' reports of its
     * answers; if it is slow still, its load moves by the next plan, not by this gateway alone.
     * </ul>
     */
    private void endEjectionsThePolicyOverrules(Compiled c, long now) {
        List<Ejection> ended = new ArrayList<>(0);
        List<String> why = new ArrayList<>(0);
        while (!ejecting.compareAndSet(false, true)) {
            Thread.onSpinWait(); // a failure path is deciding an ejection: it holds the flag for microseconds
        }
        try {
            for (EngineCell cell : cells.values()) {
                if (!cell.ejected(now)) {
                    continue;
                }
                if (cell.errorsExpected && cell.ejectedFor == EngineCell.FAILING) {
                    ended.add(cell.endEjection(now));
                    why.add("the policy plans it knowing that a share of its attempts fail");
                } else if (cell.ejectedFor == EngineCell.SLOW && !othersTakeItsPlan(c, cell, now)) {
                    ended.add(cell.endEjection(now));
                    why.add("the policy sends it more from here than the engines in rotation have room for");
                }
            }
        } finally {
            ejecting.set(false);
        }
        for (int i = 0; i < ended.size(); i++) {
            options.listener().onEjectionEnded(ended.get(i), why.get(i));
        }
    }

    /** The engine of {@code k} ejected now for the least harm below {@code severity} (the first such), or null. */
    private static EngineCell ejectedForLess(ClassRoute k, int severity, long now) {
        EngineCell best = null;
        for (EngineCell c : k.cells) {
            // one past the cap holds no place under it to give
            if (c.ejectedFor < severity && !c.pastTheCap && c.ejected(now)
                    && (best == null || c.ejectedFor < best.ejectedFor)) {
                best = c;
            }
        }
        return best;
    }

    /** How many of {@code cells} (chosen to return early) are engines of {@code k}. */
    private static int freedIn(ClassRoute k, List<EngineCell> cells) {
        int n = 0;
        for (EngineCell c : cells) {
            if (ClassRoute.indexOf(k.cells, c) >= 0) {
                n++;
            }
        }
        return n;
    }

    /**
     * The engines of {@code k} ejected under the cap, or with {@code pastTheCap} those ejected past it (unreachable),
     * which take no place under it.
     */
    private static int ejectedIn(ClassRoute k, long now, boolean pastTheCap) {
        int n = 0;
        for (EngineCell c : k.cells) {
            if (c.ejected(now) && c.pastTheCap == pastTheCap) {
                n++;
            }
        }
        return n;
    }

    // ---------------------------------------------------------------- refusals (rare paths)

    private Decision shed(Compiled c, ClassRoute k) {
        if (k.nearInService == 0 && k.near.length > 0) {
            return Decision.refused(k.id, c.snapshot.version(), false, Refusal.NO_ENGINE_IN_SERVICE, "class '" + k.id
                    + "' (model '" + k.model + "') has no engine in service: all " + k.near.length + " engines it may "
                    + "use from gateway cluster '" + gateway + "' are out of service in snapshot "
                    + c.snapshot.version() + " (" + names(k.near, 5) + ")", unavailableRetryAfterNanos);
        }
        return Decision.refused(k.id, c.snapshot.version(), false, Refusal.SHED, "class '" + k.id
                + "' is over capacity: the policy sheds " + Math.round(k.shed * 1000) / 10.0
                + "% of its requests", shedRetryAfterNanos);
    }

    private static String names(EngineCell[] cells, int max) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < cells.length && i < max; i++) {
            b.append(i == 0 ? "" : ", ").append(cells[i].id);
        }
        return cells.length > max ? b + " and " + (cells.length - max) + " more" : b.toString();
    }

    private Decision noAllowedEngine(Compiled c, ClassRoute k) {
        return Decision.refused(k.id, c.snapshot.version(), false, Refusal.NO_ALLOWED_ENGINE, "class '" + k.id
                + "' (model '" + k.model + "') has no engine it may use at gateway cluster '" + gateway + "'",
                unavailableRetryAfterNanos);
    }

    private Decision engineLimit(Compiled c, ClassRoute k, boolean fallback) {
        return Decision.refused(k.id, c.snapshot.version(), fallback, Refusal.ENGINE_LIMIT, "every engine class '"
                + k.id + "' may use is at its limit of requests in flight (" + limits(k) + ")",
                shedRetryAfterNanos);
    }

    /** A class's per-engine limits as an operator reads them: "4 on e1, 3 on e2 …", and how they were set. */
    private String limits(ClassRoute k) {
        StringBuilder b = new StringBuilder();
        int shown = 0;
        for (int i = 0; i < k.near.length && shown < 5; i++, shown++) {
            b.append(i == 0 ? "" : ", ").append(k.limit(k.near[i])).append(" on ").append(k.near[i].id);
        }
        if (k.near.length > shown) {
            b.append(" and ").append(k.near.length - shown).append(" more");
        }
        boolean derived = k.rank > 0 && !k.sharedAbove.isEmpty();
        b.append("; ").append(derived && Double.isFinite(options.inFlightPerCapacity())
                ? "an engine's limit is " + java.math.BigDecimal.valueOf(options.inFlightPerCapacity()).stripTrailingZeros()
                        .toPlainString() + " × what it holds at its planned capacity, "
                  + "at most " + limit : "max_in_flight_per_engine " + limit);
        return derived && k.keep < 1 ? b + ", less the share kept for higher priorities"
                + (k.sharedAbove.size() < k.near.length ? " on the engines they may use too" : "") : b.toString();
    }

    // ---------------------------------------------------------------- policy path

    @Override
    public synchronized boolean swap(Snapshot snapshot) {
        if (snapshot == null) {
            throw new IllegalArgumentException("snapshot: missing");
        }
        Compiled current = compiled;
        long now = ticker.nanos();
        if (snapshot.version() < current.snapshot.version()) {
            return false;
        }
        confirmed(now);
        if (snapshot == current.snapshot || snapshot.equals(current.snapshot)) {
            compiled = current.refreshed(now);
        } else if (snapshot.version() == current.snapshot.version()) {
            return false; // one version, two contents: a publisher that does not know its own history
        } else {
            Compiled next = Compiled.compile(gateway, snapshot, current, now, this::cell, this::retryBudget, this::pool,
                    options);
            floors(next);
            compiled = next;
            cells.keySet().retainAll(snapshot.engines().keySet());
            endEjectionsThePolicyOverrules(next, now);
        }
        if (inFallback.compareAndSet(true, false)) {
            options.listener().onFallback(false, "snapshot " + snapshot.version() + " swapped in: routing by policy");
        }
        return true;
    }

    @Override
    public Snapshot snapshot() {
        return compiled.snapshot;
    }

    @Override
    public DataPlaneStatus status() {
        Compiled c = compiled;
        long now = ticker.nanos();
        return new DataPlaneStatus(gateway, c.snapshot.version(), c.snapshot.hash(), Math.max(0, now - c.receivedAt),
                now - c.receivedAt > maxAgeNanos, totalInFlight.get(), retryTokens(c), ejections().size(),
                c.localTables, spills.sum());
    }

    /** The deposits banked in the budgets of {@code c}'s classes, summed. */
    private static double retryTokens(Compiled c) {
        double sum = 0;
        for (ClassRoute k : c.byId.values()) {
            sum += k.retryTokens.available();
        }
        return sum;
    }

    @Override
    public List<Ejection> ejections() {
        long now = ticker.nanos();
        List<Ejection> out = new ArrayList<>();
        for (EngineCell c : cells.values()) {
            Ejection e = c.ejection;
            if (e != null && e.untilNanos() - now > 0) {
                out.add(e);
            }
        }
        out.sort(Comparator.comparing(Ejection::engineId));
        return out;
    }

    @Override
    public int inFlight(String engineId) {
        EngineCell c = cells.get(engineId);
        return c == null ? 0 : c.inFlight.get();
    }

}
