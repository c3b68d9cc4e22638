package dev.sextant.sim;

import java.util.Arrays;

/**
 * The discrete-event core: a clock in milliseconds and a queue of actions ordered by (time, insertion
 * order). Single-threaded; ties are broken by insertion order, so a run is a pure function of its
 * inputs and seed.
 *
 * <p>Implementation note. A binary heap over parallel primitive arrays (time, sequence number, slot)
 * keeps the per-event cost to a few comparisons and no boxing; actions sit in a parallel object array.
 */
final class EventLoop {
    private double[] times = new double[1024];
    private long[] seqs = new long[1024];
    private Runnable[] actions = new Runnable[1024];
    private int size;
    private long nextSeq;
    private double now;
    private long fired;

    /** Current simulated time, ms. */
    double now() {
        return now;
    }

    /** Events fired so far. */
    long fired() {
        return fired;
    }

    /** Runs {@code action} at {@code time} ms (≥ now). */
    void at(double time, Runnable action) {
        if (!(time >= now)) {
            throw new IllegalArgumentException("time: " + time + " (expected: >= now " + now + ")");
        }
        if (size == times.length) {
            int n = size * 2;
            times = Arrays.copyOf(times, n);
            seqs = Arrays.copyOf(seqs, n);
            actions = Arrays.copyOf(actions, n);
        }
        int i = size++;
        long s = nextSeq++;
        while (i > 0) {
            int p = (i - 1) >>> 1;
            if (less(time, s, times[p], seqs[p])) {
                times[i] = times[p];
                seqs[i] = seqs[p];
                actions[i] = actions[p];
                i = p;
            } else {
                break;
            }
        }
        times[i] = time;
        seqs[i] = s;
        actions[i] = action;
    }

    /** Runs {@code action} {@code delay} ms from now. */
    void after(double delay, Runnable action) {
        at(now + delay, action);
    }

    private static boolean less(double t1, long s1, double t2, long s2) {
        return t1 < t2 || (t1 == t2 && s1 < s2);
    }

    /** True when no event is pending. */
    boolean isEmpty() {
        return size == 0;
    }

    /** Fires the earliest event; false when none is left. */
    boolean step() {
        if (size == 0) {
            return false;
        }
        double t = times[0];
        Runnable a = actions[0];
        size--;
        if (size > 0) {
            double lt = times[size];
            long ls = seqs[size];
            Runnable la = actions[size];
            actions[size] = null;
            int i = 0;
            int half = size >>> 1;
            while (i < half) {
                int c = 2 * i + 1;
                int r = c + 1;
                if (r < size && less(times[r], seqs[r], times[c], seqs[c])) {
                    c = r;
                }
                if (!less(times[c], seqs[c], lt, ls)) {
                    break;
                }
                times[i] = times[c];
                seqs[i] = seqs[c];
                actions[i] = actions[c];
                i = c;
            }
            times[i] = lt;
            seqs[i] = ls;
            actions[i] = la;
        } else {
            actions[0] = null;
        }
        now = t;
        fired++;
        a.run();
        return true;
    }

    /** Fires events until none is left. */
    void runAll() {
        while (step()) {
            // each step advances the clock
        }
    }
}
