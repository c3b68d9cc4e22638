package dev.sextant.sim;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * {@code legacy-feedback}: the design Sextant replaces. Remove engines that cannot serve the request
 * (model, residency), then weighted rendezvous hashing of the conversation over the rest, with engine
 * weights from a periodic proportional controller fed by scraped engine metrics.
 *
 * <p>The controller, every {@code period}: smooths each engine's TTFT, TBT and KV cache usage
 * (exponentially, weight {@code smoothing} on the new scrape), compares each engine with its peers
 * (engines of the same model) through the score {@code s_j = ttft_j/mean(ttft) + tbt_j/mean(tbt) +
 * util_j/mean(util)}, and moves its weight in proportion to how far the score is from the peers' mean:
 * {@code w_j ← w_j · (1 − gain · (s_j − s̄)/s̄)}, clamped to {@code [minWeight·w0_j, w0_j/minWeight]} where
 * {@code w0_j} is its initial weight (its capacity). See {@link #update}.
 */
final class LegacyFeedbackPolicy extends BaselinePolicy {
    private final String name;
    private final Scenario.LegacyParams params;
    private double[] weight;
    private double[] initial;
    private int[] group;
    private double[] ttft;
    private double[] tbt;
    private double[] util;
    private boolean[] up;
    private Simulation.Scrape latest;
    private int[] gatewaysWithDemand;

    LegacyFeedbackPolicy(String name, Scenario.LegacyParams params) {
        this.name = name;
        this.params = params;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void start(Simulation s) {
        super.start(s);
        int n = s.engineCount;
        weight = new double[n];
        initial = new double[n];
        group = new int[n];
        ttft = new double[n];
        tbt = new double[n];
        util = new double[n];
        up = new boolean[n];
        Arrays.fill(ttft, Double.NaN);
        Arrays.fill(tbt, Double.NaN);
        Arrays.fill(util, Double.NaN);
        Arrays.fill(up, true);
        Map<String, Integer> groups = new HashMap<>();
        for (int j = 0; j < n; j++) {
            var e = s.topology.engines().get(j);
            weight[j] = e.capacityRps();
            initial[j] = e.capacityRps();
            group[j] = groups.computeIfAbsent(e.models().get(0), m -> groups.size());
        }
        gatewaysWithDemand = new int[s.classCount];
        for (int k = 0; k < s.classCount; k++) {
            String cls = s.topology.classes().get(k).id();
            for (var g : s.topology.gatewayClusters()) {
                if (s.topology.demandRps().getOrDefault(g.id(), Map.of()).getOrDefault(cls, 0.0) > 0) {
                    gatewaysWithDemand[k]++;
                }
            }
        }
        s.onScrape(scrape -> latest = scrape);
        s.loop.at(params.periodMs(), this::tick);
    }

    private void tick() {
        Simulation.Scrape s = latest;
        if (s != null) {
            double a = params.smoothing();
            for (int j = 0; j < weight.length; j++) {
                up[j] = s.up()[j];
                ttft[j] = ewma(ttft[j], s.ttftMs()[j], a);
                tbt[j] = ewma(tbt[j], s.tbtMs()[j], a);
                util[j] = ewma(util[j], s.kvUsage()[j], a);
            }
            double[] before = weight.clone();
            weight = update(weight, initial, group, up, ttft, tbt, util, params.gain(), params.minWeight());
            sim.metrics.churn(churn(before, weight));
        }
        if (sim.loop.now() < sim.scenario.durationMs() || sim.metrics.open() > 0) {
            sim.loop.after(params.periodMs(), this::tick);
        }
    }

    static double ewma(double old, double sample, double a) {
        if (Double.isNaN(sample)) {
            return old;
        }
        return Double.isNaN(old) ? sample : a * sample + (1 - a) * old;
    }

    /**
     * One controller step (pure). Engines that are down or have no smoothed value in a term keep their
     * weight and are left out of their group's means.
     *
     * @return the new weights
     */
    static double[] update(double[] w, double[] w0, int[] group, boolean[] up, double[] ttft, double[] tbt,
                           double[] util, double gain, double minWeight) {
        int n = w.length;
        double[] out = w.clone();
        int groups = 0;
        for (int g : group) {
            groups = Math.max(groups, g + 1);
        }
        for (int g = 0; g < groups; g++) {
            double mt = mean(group, g, up, ttft);
            double mb = mean(group, g, up, tbt);
            double mu = mean(group, g, up, util);
            double[] score = new double[n];
            double sum = 0;
            int count = 0;
            for (int j = 0; j < n; j++) {
                if (group[j] != g || !up[j] || !valid(ttft[j], tbt[j], util[j])) {
                    continue;
                }
                score[j] = term(ttft[j], mt) + term(tbt[j], mb) + term(util[j], mu);
                sum += score[j];
                count++;
            }
            if (count < 2 || sum <= 0) {
                continue;
            }
            double mean = sum / count;
            for (int j = 0; j < n; j++) {
                if (group[j] != g || !up[j] || !valid(ttft[j], tbt[j], util[j])) {
                    continue;
                }
                double next = w[j] * (1 - gain * (score[j] - mean) / mean);
                out[j] = Math.max(minWeight * w0[j], Math.min(w0[j] / minWeight, next));
            }
        }
        return out;
    }

    private static boolean valid(double a, double b, double c) {
        return !Double.isNaN(a) && !Double.isNaN(b) && !Double.isNaN(c);
    }

    private static double term(double x, double mean) {
        return mean > 0 ? x / mean : 0;
    }

    private static double mean(int[] group, int g, boolean[] up, double[] x) {
        double s = 0;
        int c = 0;
        for (int j = 0; j < x.length; j++) {
            if (group[j] == g && up[j] && !Double.isNaN(x[j])) {
                s += x[j];
                c++;
            }
        }
        return c == 0 ? 0 : s / c;
    }

    /** Σ over classes and gateways with demand of Σ_j |Δ normalized weight|. */
    private double churn(double[] before, double[] after) {
        double total = 0;
        for (int k = 0; k < sim.classCount; k++) {
            int[] a = sim.allowed[k];
            double sb = 0;
            double sa = 0;
            for (int j : a) {
                sb += before[j];
                sa += after[j];
            }
            double d = 0;
            for (int j : a) {
                d += Math.abs(after[j] / sa - before[j] / sb);
            }
            total += d * gatewaysWithDemand[k];
        }
        return total;
    }

    @Override
    protected int choose(SimRequest r, int exclude) {
        long key = r.affinityKey();
        int best = -1;
        double bestScore = Double.POSITIVE_INFINITY;
        for (int j : sim.allowed[r.trafficClass]) {
            if (candidate(r, j, exclude)) {
                double s = Hashing.score(key, j, weight[j]);
                if (s < bestScore) {
                    bestScore = s;
                    best = j;
                }
            }
        }
        return best;
    }

    @Override
    public double weight(int gateway, int cls, int engine) {
        return share(cls, engine, weight);
    }
}
