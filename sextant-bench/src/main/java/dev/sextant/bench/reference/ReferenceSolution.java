package dev.sextant.bench.reference;

import java.util.Map;

/**
 * What the {@link ReferenceSolver} found for one topology.
 *
 * <p>Bracket of the true optimum. The LP minimizes a piecewise-linear interpolation ψ_j of each engine
 * cost φ_j(x) = x·T_j(x). Because φ_j is convex, ψ_j ≥ φ_j, and ψ_j − φ_j ≤ ε_j on [0, c_j]; so for the
 * true optimum V* of docs/design.md §3 (penalties included):
 * {@code lpObjective − pwlErrorBound ≤ V* ≤ latencyCost + shedPenaltyCost ≤ lpObjective}.
 *
 * @param state             the LP solver's final state (e.g. {@code OPTIMAL}); the other fields mean
 *                          something only when it is optimal
 * @param lpObjective       the LP's objective: Σ f·L + Σ ψ_j(x_j) + Σ P_k·s_k, ms·req/s
 * @param latencyCost       the true latency cost at the LP's solution: Σ f·L + Σ φ_j(x_j) with the exact
 *                          engine cost, ms·req/s (what the optimizer reports as its latency cost)
 * @param pwlLatencyCost    the same with the interpolated engine cost ψ_j, ms·req/s
 * @param shedPenaltyCost   Σ P_k·s_k, ms·req/s
 * @param pwlErrorBound     a-priori bound ε = Σ_j max_{[0, c_j]} (ψ_j − φ_j), ms·req/s, ≥ 0
 * @param totalShedRps      Σ s_k, req/s
 * @param shedRps           gateway cluster → class → req/s shed (entries for every demanded class)
 * @param engineLoadRps     engine → req/s routed to it (every engine, 0 for an unusable one)
 * @param flowRps           gateway cluster → class → engine → req/s (only positive flows)
 * @param variables         LP columns
 * @param constraints       LP rows
 * @param segments          piecewise-linear segments per engine cost
 * @param aggregated        true when interchangeable engines shared their flow variables (see
 *                          {@link ReferenceSolver#aggregated()})
 */
public record ReferenceSolution(String state, double lpObjective, double latencyCost, double pwlLatencyCost,
                                double shedPenaltyCost, double pwlErrorBound, double totalShedRps,
                                Map<String, Map<String, Double>> shedRps, Map<String, Double> engineLoadRps,
                                Map<String, Map<String, Map<String, Double>>> flowRps, int variables,
                                int constraints, int segments, boolean aggregated) {

    /** True when the LP solver proved optimality. */
    public boolean optimal() {
        return state.startsWith("OPTIMAL") || state.equals("DISTINCT");
    }

    /** {@link #pwlErrorBound()} relative to the latency cost (0 when nothing is routed). */
    public double pwlErrorBoundRelative() {
        return latencyCost > 0 ? pwlErrorBound / latencyCost : 0;
    }

    /** Mean end-to-end latency over routed requests, ms (NaN when nothing is routed). */
    public double meanLatencyMs() {
        double routed = 0;
        for (double v : engineLoadRps.values()) {
            routed += v;
        }
        return routed > 0 ? latencyCost / routed : Double.NaN;
    }
}
