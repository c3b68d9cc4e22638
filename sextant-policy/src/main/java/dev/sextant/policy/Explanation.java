package dev.sextant.policy;

import java.util.List;

/**
 * Why one gateway cluster's class is routed as it is, engine by engine.
 *
 * @param gateway      gateway cluster id
 * @param classId      class id
 * @param demandRps    the class's demand at that gateway, req/s
 * @param priceMs      the class's marginal latency π, ms
 * @param shedFraction fraction shed
 * @param engines      one line per allowed engine, used engines first (by weight), then unused by cost
 * @param disallowed   engines that may not serve the class, each with the reason (model, residency)
 * @param summary      sentences for a person: the decision and what the alternatives would cost
 */
public record Explanation(String gateway, String classId, double demandRps, double priceMs, double shedFraction,
                          List<EngineLine> engines, List<String> disallowed, List<String> summary) {

    /**
     * One allowed engine.
     *
     * @param engine            engine id
     * @param weight            fraction of this class's requests sent there
     * @param networkMs         round trip from the gateway cluster, ms
     * @param engineLatencyMs   engine-side latency at its load, ms
     * @param marginalCostMs    network ms + engine price: what one more request would cost there, ms
     * @param utilization       load / effective capacity
     * @param shadowPriceMs     capacity shadow price, ms
     * @param penalty           outlier penalty factor (1 = none)
     * @param reason            in words
     */
    public record EngineLine(String engine, double weight, double networkMs, double engineLatencyMs,
                             double marginalCostMs, double utilization, double shadowPriceMs, double penalty,
                             String reason) {
    }

    public Explanation {
        engines = List.copyOf(engines);
        disallowed = List.copyOf(disallowed);
        summary = List.copyOf(summary);
    }
}
