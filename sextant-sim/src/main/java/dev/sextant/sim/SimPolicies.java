package dev.sextant.sim;

import dev.sextant.control.ControlOptions;
import dev.sextant.request.DataPlaneOptions;
import java.util.List;

/** The policies the simulator compares, by name. */
final class SimPolicies {
    private SimPolicies() {
    }

    /** What a scenario runs when it names no policies, Sextant first. */
    static final List<String> DEFAULT = List.of("sextant", "legacy-feedback", "nearest", "waterfall", "round-robin",
            "least-request", "prefix-aware");

    /**
     * Sextant with its gateways' prefill spacing off ({@code space_prefills: false}), for what spacing is worth; one
     * of the {@code sextant[option=value,…]} variants {@link #create} takes.
     */
    static final String SEXTANT_UNSPACED = "sextant[space_prefills=false]";

    /**
     * Every policy name: the default set, {@code random}, a reference for what {@code round-robin}'s regular spacing
     * of arrivals is worth, and {@link #SEXTANT_UNSPACED} (docs/evaluation.md), the last two run when named.
     */
    static final List<String> ALL = java.util.stream.Stream.concat(DEFAULT.stream(),
            java.util.stream.Stream.of("random", SEXTANT_UNSPACED)).toList();

    /**
     * A fresh policy instance. {@code legacy-feedback[gain=g]} is the legacy controller at gain g;
     * {@code sextant[option=value,…]} is Sextant with the options given, of the gateways' {@code space_prefills} and
     * {@code spread_shared_prefixes} and the control loop's {@code keep_in_region} (each {@code true} or
     * {@code false}) and {@code demand_hold} (seconds, 0 for none).
     *
     * @throws IllegalArgumentException for an unknown name
     */
    static SimPolicy create(String name, Scenario scenario) {
        if (name.startsWith("legacy-feedback[gain=") && name.endsWith("]")) {
            String text = name.substring("legacy-feedback[gain=".length(), name.length() - 1);
            double gain = number(text);
            if (!(gain > 0) || Double.isInfinite(gain)) { // as legacy.gain in a scenario file
                throw new IllegalArgumentException("policy: '" + name + "': gain '" + text
                        + "' (expected: a finite number > 0)");
            }
            Scenario.LegacyParams p = scenario.legacy();
            return new LegacyFeedbackPolicy(name, new Scenario.LegacyParams(gain, p.periodMs(), p.smoothing(),
                    p.minWeight()));
        }
        if (name.startsWith("sextant[") && name.endsWith("]")) {
            return sextant(name, name.substring("sextant[".length(), name.length() - 1));
        }
        return switch (name) {
            case "sextant" -> new SextantPolicy();
            case "legacy-feedback" -> new LegacyFeedbackPolicy(name, scenario.legacy());
            case "nearest" -> new NearestPolicy();
            case "waterfall" -> new WaterfallPolicy();
            case "round-robin" -> new RoundRobinPolicy();
            case "random" -> new RandomPolicy();
            case "least-request" -> new LeastRequestPolicy();
            case "prefix-aware" -> new PrefixAwarePolicy();
            default -> throw new IllegalArgumentException("policy: '" + name + "' (expected one of " + ALL
                    + ", legacy-feedback[gain=G] or sextant[option=value,…])");
        };
    }

    private static SextantPolicy sextant(String name, String list) {
        DataPlaneOptions.Builder b = DataPlaneOptions.builder();
        ControlOptions control = ControlOptions.defaults();
        java.util.Set<String> given = new java.util.HashSet<>();
        for (String pair : list.split(",", -1)) {
            String[] kv = pair.split("=", -1);
            String option = kv[0];
            if (!List.of("space_prefills", "spread_shared_prefixes", "keep_in_region", "demand_hold")
                    .contains(option)) {
                throw new IllegalArgumentException("policy: sextant option '" + option
                        + "' (expected: space_prefills, spread_shared_prefixes, keep_in_region or demand_hold)");
            }
            if (!given.add(option)) {
                throw new IllegalArgumentException("policy: sextant option '" + option + "' twice (expected: each "
                        + "option once)");
            }
            if (option.equals("demand_hold")) {
                double seconds = kv.length == 2 ? number(kv[1]) : Double.NaN;
                if (!(seconds >= 0 && seconds <= MAX_HOLD_S)) {
                    throw new IllegalArgumentException("policy: sextant option '" + pair + "' (expected: "
                            + "demand_hold=S, seconds from 0 to " + (long) MAX_HOLD_S + ")");
                }
                control = control.withDemandHold(java.time.Duration.ofMillis(Math.round(seconds * 1000)));
                continue;
            }
            if (kv.length != 2 || !kv[1].equals("true") && !kv[1].equals("false")) {
                throw new IllegalArgumentException("policy: sextant option '" + pair + "' (expected: " + option
                        + "=true or " + option + "=false)");
            }
            boolean value = kv[1].equals("true");
            switch (option) {
                case "space_prefills" -> b.spacePrefills(value);
                case "spread_shared_prefixes" -> b.spreadSharedPrefixes(value);
                default -> control = control.withKeepInRegion(value);
            }
        }
        return new SextantPolicy(name, b.build(), control);
    }

    /** The longest {@code demand_hold} a policy name may give, seconds: a day. */
    private static final double MAX_HOLD_S = 86_400;

    /** {@code text} as a number, NaN where it is none (the caller names the option and what it expects). */
    private static double number(String text) {
        try {
            return Double.parseDouble(text);
        } catch (NumberFormatException e) {
            return Double.NaN;
        }
    }

    /**
     * The run list: the requested names, with the scenario's gain sweep after {@code legacy-feedback}.
     *
     * @param field where the names came from, for the message ({@code --policies})
     * @throws IllegalArgumentException when a run would come twice (named twice, or named and also in the sweep):
     *                                  the report keys its series and files by name
     */
    static List<String> expand(List<String> names, Scenario scenario, String field) {
        List<String> out = new java.util.ArrayList<>();
        for (String n : names) {
            add(out, n, field);
            if (n.equals("legacy-feedback")) {
                for (double g : scenario.gainSweep()) {
                    add(out, "legacy-feedback[gain=" + g + "]", field);
                }
            }
        }
        return out;
    }

    private static void add(List<String> runs, String name, String field) {
        if (runs.contains(name)) {
            throw new IllegalArgumentException(field + ": '" + name + "' twice (expected: each policy once"
                    + (name.startsWith("legacy-feedback[") ? "; legacy-feedback also runs the scenario's gain_sweep" : "")
                    + ")");
        }
        runs.add(name);
    }
}
