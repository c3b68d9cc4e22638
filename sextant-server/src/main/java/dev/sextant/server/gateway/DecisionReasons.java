package dev.sextant.server.gateway;

import dev.sextant.request.Decision;
import dev.sextant.request.Outcome;
import dev.sextant.request.Refusal;
import java.util.ArrayList;
import java.util.List;

/**
 * Why the gateway sent a request where it did, on the wire: {@link Decision#reason()} in the {@value #HEADER}
 * header of every proxied answer and refusal, in the access log's {@code reason=} and, by its first word, in
 * {@code sextant_gateway_decisions_total{reason}} (docs/request-path.md, "Why this engine").
 */
final class DecisionReasons {
    /** The response header that carries {@link Decision#reason()}. */
    static final String HEADER = "x-sextant-reason";

    /** The first words of a routed first attempt's reason: the data plane's fixed vocabulary. */
    private static final List<String> ROUTED = List.of("key", "spill:bounded-load", "skip:ejected", "skip:limit",
            "spill:overload", "spaced:prefill", "spaced:full-batch", "recent", "nearest", "spill:ejected", "least-full",
            "spill:limit");

    private DecisionReasons() {
    }

    /**
     * The metric label of a reason: its first word, up to the first comma, which keeps a retry's outcome
     * ({@code retry:connect-error,key,fallback} → {@code retry:connect-error}) and leaves out how the retry chose and
     * the fallback mode, so the labels stay the few of {@link #labels()}.
     */
    static String label(String reason) {
        int comma = reason.indexOf(',');
        return comma < 0 ? reason : reason.substring(0, comma);
    }

    /**
     * Every label a decision can have: the routed words, {@code retry:} and each retryable outcome, {@code refused:}
     * and each refusal (twenty-seven in all).
     */
    static List<String> labels() {
        List<String> all = new ArrayList<>(ROUTED);
        for (Outcome o : Outcome.values()) {
            if (o.retryable()) {
                all.add("retry:" + o.word());
            }
        }
        for (Refusal r : Refusal.values()) {
            all.add("refused:" + r.word());
        }
        return List.copyOf(all);
    }
}
