package dev.sextant.signal;

/**
 * The bucket bounds of vLLM's histograms that {@link EngineMetrics} reads, for whatever exports them as vLLM does (the
 * engine emulator, the simulator's engines). Each call returns a fresh array.
 */
public final class VllmBuckets {
    private static final double[] TTFT_SECONDS = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
        1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
    private static final double[] INTER_TOKEN_SECONDS = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
        0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
    private static final double[] TOKENS = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000,
        50_000, 100_000};

    private VllmBuckets() {
    }

    /** {@code vllm:time_to_first_token_seconds}. */
    public static double[] ttftSeconds() {
        return TTFT_SECONDS.clone();
    }

    /** {@code vllm:inter_token_latency_seconds}. */
    public static double[] interTokenSeconds() {
        return INTER_TOKEN_SECONDS.clone();
    }

    /** Tokens per request ({@code vllm:request_generation_tokens}): vLLM's 1-2-5 series. */
    public static double[] tokens() {
        return TOKENS.clone();
    }
}
