package dev.sextant.topology;

import java.util.List;

/**
 * Requests that must be treated alike: one model, one residency restriction, one priority.
 *
 * @param id        unique among classes, non-empty
 * @param model     the model id the class's requests ask for
 * @param residency regions the class's data may be processed in; empty means any region
 * @param priority  higher is more important; lower priorities are shed first
 */
public record TrafficClass(String id, String model, List<String> residency, int priority) {
    public TrafficClass {
        Checks.id("id", id);
        Checks.id("model", model);
        residency = List.copyOf(residency);
    }

    /** True when an engine in {@code region} may process this class's data. */
    public boolean allowsRegion(String region) {
        return residency.isEmpty() || residency.contains(region);
    }
}
