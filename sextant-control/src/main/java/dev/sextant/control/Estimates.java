package dev.sextant.control;

import java.util.Map;

/**
 * Everything the control loop believes about the fleet at one time, each number with its evidence and its prior:
 * what {@code explain} shows and what the optimizer is given.
 *
 * @param atNanos             when, on the loop's ticker
 * @param engines             engine id → estimate, in id order
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
        engines = Map.copyOf(engines);
        demand = Map.copyOf(demand);
        links = Map.copyOf(links);
        models = Map.copyOf(models);
    }
}
