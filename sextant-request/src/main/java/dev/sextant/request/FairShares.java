package dev.sextant.request;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Who a class's shed falls on when its requests come from several tenants: first on the tenants above their fair
 * share, so that one tenant's burst does not shed another's traffic of the same class (docs/request-path.md §3).
 *
 * <p>The rule. For each class, each tenant's demand d_t (requests that arrived in the last {@link #WINDOW_NANOS}) is
 * tracked. A tenant is <em>within its share</em> when d_t ≤ w_t / W · (1 − s) · D: its weight's part of what the
 * class admits, where D = Σ d_u over the class's tenants, W = Σ w_u over the tenants that sent any of it, and s the
 * class's shed fraction. Admission draws by the request id as it does without tenants; a request drawn to be shed
 * whose tenant is within its share is admitted instead, and the class owes one shed; the next request drawn to be
 * admitted from a tenant above its share pays it (is shed). So over time the class sheds the fraction the policy
 * says, and all of it falls on the tenants above their share, as long as they send enough to carry it (they do: the
 * tenants within their share send at most (1 − s) · D, so the others send at least s · D). The debt is bounded by
 * {@link #MAX_DEBT}: when it is full (no tenant above its share is sending), a drawn request is shed whatever its
 * tenant, as without tenants. A class with one tenant behaves exactly as without tenants (its one tenant is never
 * within a share smaller than its demand).
 *
 * <p>Implementation note: the demand of the last window is the sliding-window estimate of two fixed windows (the
 * previous window's count weighted by the part of it still inside the sliding window, plus the current count), as
 * rate limiters commonly count; counts are atomic, a window's roll races benignly (a few arrivals may be counted in
 * the wrong window). Time comes only from the data plane's {@link Ticker}. The tenant scan that decides "within its
 * share" runs only for a class that sheds, over the tenants that sent to it; tenants are a configured set.
 */
final class FairShares {
    /** The window demand is counted over, 1 s. */
    static final long WINDOW_NANOS = 1_000_000_000L;
    /** Most sheds a class may owe at once. */
    static final int MAX_DEBT = 32;

    /** Per class id, its tenants' demand and its debt. */
    private final Map<String, ClassShares> classes = new ConcurrentHashMap<>();

    /** Counts an arrival of {@code tenant} (of {@code weight}) in class {@code classId}; the class's state. */
    ClassShares arrived(String classId, String tenant, double weight, long now) {
        ClassShares c = classes.get(classId);
        if (c == null) {
            c = classes.computeIfAbsent(classId, x -> new ClassShares());
        }
        c.tenant(tenant).arrived(weight, now);
        return c;
    }

    /**
     * Whether a request of {@code tenant} in class {@code c} that shedding at {@code shed} has drawn ({@code drawn}
     * true: the draw says shed it) is shed.
     */
    boolean shed(ClassShares c, String tenant, double shed, boolean drawn, long now) {
        if (drawn) {
            if (c.debt.get() < MAX_DEBT && c.withinShare(tenant, shed, now)) {
                c.debt.incrementAndGet();
                return false;
            }
            return true;
        }
        if (c.debt.get() <= 0 || c.withinShare(tenant, shed, now)) {
            return false;
        }
        for (int d; (d = c.debt.get()) > 0; ) {
            if (c.debt.compareAndSet(d, d - 1)) {
                return true;
            }
        }
        return false;
    }

    /** Forgets the classes a snapshot no longer has. */
    void retain(java.util.Set<String> classIds) {
        classes.keySet().retainAll(classIds);
    }

    /** One class: its tenants' demand, and the sheds it owes. */
    static final class ClassShares {
        private final Map<String, Demand> tenants = new ConcurrentHashMap<>();
        final AtomicInteger debt = new AtomicInteger();

        Demand tenant(String name) {
            Demand d = tenants.get(name);
            return d != null ? d : tenants.computeIfAbsent(name, x -> new Demand());
        }

        /** d_t ≤ w_t / W · (1 − s) · D, with the sums over the tenants that sent to the class in the window. */
        boolean withinShare(String tenant, double shed, long now) {
            double total = 0;
            double weights = 0;
            double own = 0;
            double ownWeight = 0;
            for (Map.Entry<String, Demand> e : tenants.entrySet()) {
                Demand d = e.getValue();
                double rate = d.estimate(now);
                if (rate <= 0) {
                    continue;
                }
                total += rate;
                weights += d.weight;
                if (e.getKey().equals(tenant)) {
                    own = rate;
                    ownWeight = d.weight;
                }
            }
            return weights > 0 && own <= ownWeight / weights * (1 - shed) * total;
        }
    }

    /** One tenant's arrivals in a class: the current and the previous fixed window. */
    static final class Demand {
        private final AtomicLong current = new AtomicLong();
        private volatile long previous;
        private final AtomicLong window = new AtomicLong(Long.MIN_VALUE);
        volatile double weight = 1;

        void arrived(double w, long now) {
            weight = w;
            roll(now);
            current.incrementAndGet();
        }

        /** Arrivals in the last window: the previous window's share still inside it plus the current window's. */
        double estimate(long now) {
            roll(now);
            double into = (double) Math.floorMod(now, WINDOW_NANOS) / WINDOW_NANOS;
            return previous * (1 - into) + current.get();
        }

        private void roll(long now) {
            long w = Math.floorDiv(now, WINDOW_NANOS);
            long held = window.get();
            if (w != held && window.compareAndSet(held, w)) { // one thread rolls; the others count on
                long count = current.getAndSet(0);
                previous = w == held + 1 ? count : 0;
            }
        }
    }
}
