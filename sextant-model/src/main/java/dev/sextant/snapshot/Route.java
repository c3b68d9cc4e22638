package dev.sextant.snapshot;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * How one gateway cluster routes one class.
 *
 * @param model         the class's model id
 * @param residency     regions the class may be served in; empty = any
 * @param priority      the class's priority, higher is more important
 * @param demandRps     the demand the policy was computed for, req/s, ≥ 0
 * @param weights       engine id → fraction of this class's requests sent there, each in [0, 1],
 *                      summing to {@code 1 − shedFraction}; only allowed engines appear
 * @param shedFraction  fraction refused by admission, in [0, 1]
 * @param priceMs       the class's marginal latency π: the cost in ms of serving one more request of
 *                      this class (equal across the engines it uses); null-free, NaN for a policy
 *                      that has no prices
 */
public record Route(String model, List<String> residency, int priority, double demandRps, Map<String, Double> weights,
                    double shedFraction, double priceMs) {
    public Route {
        residency = List.copyOf(residency);
        weights = Collections.unmodifiableSortedMap(new TreeMap<>(weights));
        if (!(shedFraction >= 0 && shedFraction <= 1)) {
            throw new IllegalArgumentException("shed_fraction: " + shedFraction + " (expected: in [0, 1])");
        }
        weights.forEach((e, w) -> {
            if (!(w >= 0 && w <= 1)) {
                throw new IllegalArgumentException("weights." + e + ": " + w + " (expected: in [0, 1])");
            }
        });
    }
}
