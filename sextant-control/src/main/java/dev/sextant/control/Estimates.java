package dev.sextant.control;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Everything the control loop believes about the fleet at one time, each number with its evidence and its prior:
 * what {@code explain} shows and what the optimizer is given.
 *
 * <p>Every map iterates in the order of its keys, at every level, so that what is computed by going over them (a sum,
 * a first match, a file's rows) is the same in every run: a simulation repeats exactly for its seed.
 *
 * @param atNanos             when, on the loop's ticker
 * @param engines             engine id → estimate
 * @param demand              gateway cluster id → class id → demand
 * @param links               gateway cluster id → engine cluster id → round trip
 * @param models              model id → output length
 * @param affinityDiscountMs  the prefill time one request saves by staying on the engine that holds its KV cache, ms
 * @param affinityWhy         the evidence behind it
 */
public record Estimates(long atNanos, Map<String, EngineEstimate> engines,
                        Map<String, Map<String, DemandEstimate>> demand, Map<String, Map<String, LinkEstimate>> links,
                        Map<String, ModelEstimate> models, double affinityDiscountMs, String affinityWhy) {
    public Estimates {
        engines = sorted(engines);
        demand = sortedRows(demand);
        links = sortedRows(links);
        models = sorted(models);
    }

    private static <V> Map<String, V> sorted(Map<String, V> m) {
        m.forEach((k, v) -> Objects.requireNonNull(v, k));
        return Collections.unmodifiableMap(new TreeMap<>(m));
    }

    private static <V> Map<String, Map<String, V>> sortedRows(Map<String, Map<String, V>> m) {
        TreeMap<String, Map<String, V>> out = new TreeMap<>();
        m.forEach((k, row) -> out.put(k, sorted(row)));
        return Collections.unmodifiableMap(out);
    }
}
