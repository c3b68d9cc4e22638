package dev.sextant.request;

import java.util.concurrent.atomic.AtomicLong;

/**
 * One class's retry budget at a gateway: a token bucket filled by the class's requests ({@code r(u)} tokens
 * each, in millionths, u the utilization of the engines the class may use) and capped, plus a floor of
 * {@code minRetriesPerSecond} paced by GCRA (one token per interval, no bursts), so over any window T the
 * class's retries are at most its deposits + floor × T + 1. Lock-free: two atomics.
 */
final class RetryTokens {
    static final long UNIT = 1_000_000L;

    private final AtomicLong micro = new AtomicLong();
    private final AtomicLong floorTat;
    private final long capMicro;
    private volatile long floorIntervalNanos;

    RetryTokens(double cap, long now) {
        this.capMicro = (long) (cap * UNIT);
        this.floorTat = new AtomicLong(now);
    }

    void floorPerSecond(double rate) {
        floorIntervalNanos = rate > 0 ? Math.max(1L, (long) (1e9 / rate)) : 0L;
    }

    void deposit(long tokensMicro) {
        if (tokensMicro > 0 && micro.get() < capMicro) {
            micro.addAndGet(tokensMicro);
        }
    }

    boolean trySpend(long now) {
        for (long v = micro.get(); v >= UNIT; v = micro.get()) {
            if (micro.compareAndSet(v, v - UNIT)) {
                return true;
            }
        }
        long interval = floorIntervalNanos;
        if (interval == 0) {
            return false;
        }
        for (long t = floorTat.get(); t - now <= 0; t = floorTat.get()) {
            if (floorTat.compareAndSet(t, now + interval)) {
                return true;
            }
        }
        return false;
    }

    /** Gives back a token taken for a retry that found no engine. */
    void refund() {
        micro.addAndGet(UNIT);
    }

    double available() {
        return micro.get() / (double) UNIT;
    }
}
