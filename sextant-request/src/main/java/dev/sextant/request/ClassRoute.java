package dev.sextant.request;

import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.KeyOrder;

/**
 * One class's routing state, precomputed at swap time so the request path only reads arrays.
 * Every engine in {@link #cells} and {@link #near} was checked against the class's allowed set
 * (model served, region within the residency) when this was built, whatever the snapshot's weights
 * say: the request path cannot reach an engine outside the allowed set (invariant 1).
 */
final class ClassRoute {
    final String id;
    /** The snapshot's route this was compiled from. */
    final Route route;
    final String model;
    /** Regions allowed, sorted; empty = any. */
    final String[] residency;
    final int priority;
    /** Fraction of requests refused by admission, in [0, 1]. */
    final double shed;

    /**
     * Weighted consistent hashing over the allowed engines with positive weight, normally the
     * snapshot's own table; null when there are none.
     */
    final KeyOrder table;
    /** Null when {@link #table} is the snapshot's; else why this gateway built it from the weights. */
    final String localTable;
    /** Aligned with the table's engine indices. */
    final EngineCell[] cells;
    final String[] endpoints;
    /** What to write as the body's {@code priority} for each engine, or {@link Decision#NO_ENGINE_PRIORITY}. */
    final int[] enginePriority;
    /** Engine's share of its pool's in-flight requests at this gateway (all classes of the pool), for bounded load. */
    final double[] share;
    /** This gateway's requests on the engines of the class's pool (Compiled.Pools). */
    final Pool pool;
    /** Expected TTFT at the gateway (engine prediction + network RTT), ms; NaN = no rule. */
    final double[] expectedTtftMs;
    /**
     * What an engine may take from this gateway before it is over its expected load: what the policy sends it from
     * here plus its planned spare capacity, req/s (Compiled).
     */
    final double[] allowanceRps;
    /** What the policy sends an engine from this gateway over all its classes, req/s (Compiled). */
    final double[] plannedRps;
    /** How long a request stays in flight at the engine by the snapshot (latency + round trip), ms. */
    final double[] plannedMs;
    /** How many requests the engine's batch runs at once, by the snapshot; NaN when it does not say. */
    final double[] places;
    /**
     * How long after a conversation's last request ended the engine's cache no longer holds its context, by the
     * snapshot ({@code context_kept_seconds}), ns; {@link Long#MAX_VALUE} where it does not say.
     */
    final long[] keptNanos;
    /**
     * The other gateways' requests the engine holds by the plan: what the policy sends it from them (its planned load
     * less this gateway's) × {@link #plannedMs}, Little's law.
     */
    final double[] othersInFlight;
    /** At most this many of {@link #cells} ejected at once. */
    final int maxEjected;

    /** Fallback order: every allowed, reachable engine, healthy first, then by RTT, then by id. */
    final EngineCell[] near;
    final String[] nearEndpoints;
    /** {@link #enginePriority} of the engines of {@link #near}. */
    final int[] nearEnginePriority;
    final double[] nearExpectedTtftMs;
    /** The nominal capacity of the engines of {@link #near}, req/s (0 without effective capacity). */
    final double[] nearCapacityRps;
    /** {@link #allowanceRps} of the engines of {@link #near}. */
    final double[] nearAllowanceRps;
    /** {@link #plannedMs} of the engines of {@link #near}. */
    final double[] nearPlannedMs;
    /** What the policy sends the engines of {@link #near} from other gateways: their planned load less this one's, req/s. */
    final double[] nearOthersRps;
    /** {@code nearOf[i]}: the index in {@link #near} of {@link #cells}{@code [i]}, or -1. */
    final int[] nearOf;
    /** How many of {@link #near} the snapshot gives effective capacity (in service); they come first. */
    int nearInService;
    /** {@code nearGroupEnd[i]}: index after the last engine tied with engine i (same health and RTT). */
    final int[] nearGroupEnd;
    /** The share of an engine's limit this class may fill: 1 less the priority reserve of its rank. */
    double keep = 1;
    /**
     * The limit of the highest priority (rank 0) on every engine: the fixed one, {@code max_in_flight_per_engine}.
     * The limit an engine's capacity sets is for the lower priorities, whose queue the highest would wait in.
     */
    int topLimit = Integer.MAX_VALUE;
    /** The class's rank among the R distinct priorities at this gateway (0 = highest), and R. */
    int rank;
    int ranks = 1;
    /**
     * The engines this class may use that a class of a higher priority at this gateway may use too. On the others it
     * is the highest, as far as this gateway knows: its limit there is the fixed one, and nothing is shed there to keep
     * room for a priority that cannot be sent there.
     */
    java.util.Set<EngineCell> sharedAbove = java.util.Set.of();

    /**
     * Requests in flight on {@code cell} this class may fill up to: for the highest priority {@link #topLimit}, and on
     * an engine no class above it may use ({@link #sharedAbove}); for the others the engine's limit less the priority
     * reserve,
     * ⌊limit × keep⌋ (rounded down, so that a lower priority always leaves the highest at least one place however
     * small the limit), at least 1.
     */
    int limit(EngineCell cell) {
        if (rank == 0 || !sharedAbove.contains(cell)) {
            return topLimit;
        }
        int l = cell.limit;
        return keep == 1 || l == Integer.MAX_VALUE ? l : Math.max(1, (int) Math.floor(l * keep + 1e-9));
    }

    /** This class's retry budget at this gateway: kept across snapshots, one per class id. */
    final RetryTokens retryTokens;
    /** r(u) in millionths of a retry, u the utilization of the engines this class may use: each admitted request's. */
    final long depositMicro;

    ClassRoute(String id, Route route, String[] residency, KeyOrder table, String localTable, EngineCell[] cells,
               String[] endpoints, int[] enginePriority, double[] share,
               Pool pool,
               double[] expectedTtftMs, double[] allowanceRps, double[] plannedRps, double[] plannedMs,
               double[] places, long[] keptNanos, double[] othersInFlight, int maxEjected,
               EngineCell[] near, String[] nearEndpoints, int[] nearEnginePriority, double[] nearExpectedTtftMs, double[] nearCapacityRps,
               double[] nearAllowanceRps, double[] nearPlannedMs, double[] nearOthersRps, int[] nearOf,
               int[] nearGroupEnd,
               RetryTokens retryTokens, long depositMicro) {
        this.id = id;
        this.route = route;
        this.model = route.model();
        this.residency = residency;
        this.priority = route.priority();
        this.shed = route.shedFraction();
        this.table = table;
        this.localTable = localTable;
        this.cells = cells;
        this.endpoints = endpoints;
        this.enginePriority = enginePriority;
        this.share = share;
        this.pool = pool;
        this.expectedTtftMs = expectedTtftMs;
        this.allowanceRps = allowanceRps;
        this.plannedRps = plannedRps;
        this.plannedMs = plannedMs;
        this.places = places;
        this.keptNanos = keptNanos;
        this.othersInFlight = othersInFlight;
        this.maxEjected = maxEjected;
        this.near = near;
        this.nearEndpoints = nearEndpoints;
        this.nearEnginePriority = nearEnginePriority;
        this.nearExpectedTtftMs = nearExpectedTtftMs;
        this.nearCapacityRps = nearCapacityRps;
        this.nearAllowanceRps = nearAllowanceRps;
        this.nearPlannedMs = nearPlannedMs;
        this.nearOthersRps = nearOthersRps;
        this.nearOf = nearOf;
        this.nearGroupEnd = nearGroupEnd;
        this.retryTokens = retryTokens;
        this.depositMicro = depositMicro;
    }

    boolean hasAllowedEngine() {
        return cells.length > 0 || near.length > 0;
    }

    /** True when every region this class may use is one the request allows. */
    boolean residencyWithin(java.util.List<String> allowed) {
        if (residency.length == 0) {
            return false;
        }
        for (String r : residency) {
            if (!allowed.contains(r)) {
                return false;
            }
        }
        return true;
    }

    static int indexOf(EngineCell[] cells, EngineCell cell) {
        for (int i = 0; i < cells.length; i++) {
            if (cells[i] == cell) {
                return i;
            }
        }
        return -1;
    }
}
