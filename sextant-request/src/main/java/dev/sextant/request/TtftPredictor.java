package dev.sextant.request;

import dev.sextant.snapshot.EngineState;

/**
 * The time to first token the data plane expects from an engine, engine-side, for the latency
 * outlier rule. The default uses the snapshot's {@link EngineState#latencyMs()}, the predicted
 * engine-side latency T = TTFT + (n̄ − 1)·TBT at the engine's planned load: an upper bound on the
 * TTFT, so the rule errs toward not ejecting. A gateway that knows the profile's TTFT passes a
 * sharper predictor.
 */
@FunctionalInterface
public interface TtftPredictor {
    /** The snapshot's engine-side latency as the TTFT bound. */
    TtftPredictor ENGINE_LATENCY = (engineId, state) -> state.latencyMs();

    /**
     * Expected engine-side TTFT of engine {@code engineId} in ms, &gt; 0; NaN or infinite to skip the
     * latency rule for this engine.
     */
    double expectedTtftMs(String engineId, EngineState state);
}
