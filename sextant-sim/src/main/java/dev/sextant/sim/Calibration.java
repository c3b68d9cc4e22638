package dev.sextant.sim;

import dev.sextant.topology.MeasuredProfile;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.function.DoubleSupplier;

/**
 * Measures an engine kind's latency profile the way an operator would: run one simulated engine alone
 * under the scenario's conversation workload at several fractions of its rated capacity and record mean
 * TTFT and TBT. The result is a {@link MeasuredProfile} for the control plane, consistent with how the
 * simulated engine really behaves (unlike the closed-form profile derived from the hardware).
 */
final class Calibration {
    /** Utilizations (load / rated capacity) measured. */
    static final double[] UTILIZATIONS = {0.05, 0.25, 0.5, 0.7, 0.85, 0.95};

    private Calibration() {
    }

    /** The measured profile of hardware {@code h} under workload {@code w} rated at {@code capacityRps}. */
    static MeasuredProfile measure(EngineParams h, Scenario.ClassWorkload w, double capacityRps, long seed) {
        List<MeasuredProfile.Point> points = new ArrayList<>();
        for (double rho : UTILIZATIONS) {
            double[] m = run(h, w, rho * capacityRps, seed);
            points.add(new MeasuredProfile.Point(rho, Math.max(1e-3, m[0]), Math.max(0, m[1])));
        }
        return new MeasuredProfile(points);
    }

    /**
     * Mean engine-side {TTFT, TBT} in ms at {@code rps} requests per second once the conversations' turns arrive at
     * that rate, and the requests per second it finished after the warm-up.
     */
    static double[] run(EngineParams h, Scenario.ClassWorkload w, double rps, long seed) {
        return run(h, w, rps, seed, steadyWarmupMs(w));
    }

    /**
     * How long conversations starting at a constant rate take to send their requests at it: a conversation's later
     * turns come one think time apart until it ends, so the later turns' rate reaches its level as
     * 1 − e^(−t/(T·θ)) for T turns on average and θ ms of think time; after 5·T·θ it is within 1% of it (e^(−5) ≈
     * 0.7%), plus 20 s for the engine's own warm-up. Measured after a fixed 20 s instead, a chat workload of 4 turns
     * and 10 s think times runs at about 55% of its rate when the measurement starts.
     */
    static double steadyWarmupMs(Scenario.ClassWorkload w) {
        return WARMUP_MS + 5 * w.turnsMean() * w.thinkMeanMs();
    }

    /** The engine's own warm-up: its batch and prefix cache filling. */
    static final double WARMUP_MS = 20_000;

    /**
     * As {@link #run(EngineParams, Scenario.ClassWorkload, double, long)}, measured from {@code warmupMs} on: with
     * {@link #WARMUP_MS}, the requests per second finished by an engine offered more than it carries measure its
     * saturation before a long backlog distorts it (a backlog of minutes evicts the conversations' contexts from the
     * prefix cache before their next turns come, and every turn then prefills its whole context).
     */
    static double[] run(EngineParams h, Scenario.ClassWorkload w, double rps, long seed, double warmupMs) {
        EventLoop loop = new EventLoop();
        double[] sums = new double[5];
        // new conversations until endMs; afterwards the rate decays as they end, so only requests that arrive
        // before it are at the rate measured (counting the drain's put the "80%" chat TTFT and TBT 8% and 6% low)
        double endMs = warmupMs + Math.max(60_000, 4_000 / Math.max(rps, 1e-3) * 1000);
        SplittableRandom rng = new SplittableRandom(seed);
        EngineSim.Listener listener = new EngineSim.Listener() {
            @Override
            public void firstToken(EngineSim e, SimRequest r, double at) {
                r.firstTokenMs = at;
                if (r.arrivalMs >= warmupMs && r.arrivalMs < endMs) {
                    sums[0] += at - r.arrivalMs;
                    sums[1]++;
                }
            }

            @Override
            public void finished(EngineSim e, SimRequest r, double at) {
                if (r.arrivalMs >= warmupMs && r.arrivalMs < endMs && r.outputTokens > 1) {
                    sums[2] += (at - r.firstTokenMs) / (r.outputTokens - 1);
                    sums[3]++;
                }
                if (at >= warmupMs && at < endMs) {
                    sums[4]++;
                }
                nextTurn(loop, e::arrive, r, at, w, rng);
            }

            @Override
            public void failed(EngineSim e, SimRequest r, double at, boolean connect) {
            }

            @Override
            public void timedOut(EngineSim e, SimRequest r, double at) {
            }
        };
        EngineSim engine = new EngineSim(0, "calibration", h, loop, listener, Double.POSITIVE_INFINITY);
        conversations(loop, engine::arrive, w, rng, () -> rps, endMs);
        while (loop.step()) {
            if (loop.now() > endMs + 600_000) {
                break;
            }
        }
        return new double[] {sums[1] == 0 ? h.stepMs() : sums[0] / sums[1], sums[3] == 0 ? h.stepMs() : sums[2] / sums[3],
            sums[4] * 1000 / (endMs - warmupMs)};
    }

    /**
     * New conversations of workload {@code w} for {@code engine} from now until {@code endMs}: Poisson arrivals at
     * {@code rps()} requests per second (read again at each arrival, so that the rate may change), a geometric number
     * of turns each.
     */
    static void conversations(EventLoop loop, Consumer<SimRequest> engine, Scenario.ClassWorkload w,
                              SplittableRandom rng, DoubleSupplier rps, double endMs) {
        long[] ids = {0};
        Runnable[] next = new Runnable[1];
        next[0] = () -> {
            int turns = 1;
            while (turns < 1000 && rng.nextDouble() >= 1 / w.turnsMean()) {
                turns++;
            }
            Conversation c = new Conversation(ids[0]++, 0, 0, turns);
            turn(loop, engine, c, w, rng);
            double gap = -Math.log(1 - rng.nextDouble()) / (rps.getAsDouble() / w.turnsMean() / 1000);
            if (loop.now() + gap < endMs) {
                loop.after(gap, next[0]);
            }
        };
        loop.at(loop.now(), next[0]);
    }

    /** The turn {@code r} of its conversation ended at {@code at}: the next one after a think time, if any is left. */
    static void nextTurn(EventLoop loop, Consumer<SimRequest> engine, SimRequest r, double at,
                         Scenario.ClassWorkload w, SplittableRandom rng) {
        Conversation c = r.conversation;
        c.contextTokens = r.promptTokens + r.outputTokens;
        if (c.turnsLeft > 0) {
            double think = -Math.log(1 - rng.nextDouble()) * w.thinkMeanMs();
            loop.at(at + think, () -> turn(loop, engine, c, w, rng));
        }
    }

    static void turn(EventLoop loop, Consumer<SimRequest> engine, Conversation c, Scenario.ClassWorkload w,
                     SplittableRandom rng) {
        boolean first = c.contextTokens == 0;
        int fresh = Math.max(1, (int) Math.round((first ? w.firstPromptTokens() : w.newTokensPerTurn())
                * (0.5 + rng.nextDouble())));
        int out = Math.max(1, (int) Math.round(w.outputTokens() * (0.5 + rng.nextDouble())));
        c.turnsLeft--;
        SimRequest r = new SimRequest(c.id * 1000 + c.turnsLeft, c, 0, 0, loop.now(), c.contextTokens + fresh, out);
        engine.accept(r);
    }
}
