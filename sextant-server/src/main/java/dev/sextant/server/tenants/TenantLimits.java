package dev.sextant.server.tenants;

import dev.sextant.request.Ticker;
import dev.sextant.server.internal.Numbers;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Each tenant's use of its limits ({@link Tenant#requestsPerSecond()}, {@link Tenant#tokensPerMinute()},
 * {@link Tenant#concurrentRequests()}), kept by tenant name across reloads of the tenants file, so that a reload
 * neither refills nor empties anyone's budget. Requests and tokens are token buckets (a second's and a minute's worth
 * of burst); a request that does not fit is refused at once, with the time until it would fit. The limits in force
 * are those of the {@link Tenant} passed in, so a reload's new limits apply from the next request.
 *
 * <p>Thread-safe: each tenant's buckets are updated under that tenant's own monitor, held for a few arithmetic
 * operations; tenants never wait for each other.
 */
public final class TenantLimits {
    private final Ticker ticker;
    private final Map<String, Use> uses = new ConcurrentHashMap<>();

    /** @param ticker the only source of time */
    public TenantLimits(Ticker ticker) {
        this.ticker = ticker;
    }

    /**
     * Takes one request of {@code tokens} (estimated) from {@code t}'s limits, and a place among its requests in
     * flight, to be given back with {@link #release}.
     *
     * @return null when taken; else which limit refused it
     */
    public Refusal take(Tenant t, long tokens) {
        return uses.computeIfAbsent(t.name(), x -> new Use(ticker.nanos())).take(t, tokens, ticker.nanos());
    }

    /** Gives back the place in flight a {@link #take} took for {@code t}. */
    public void release(Tenant t) {
        Use u = uses.get(t.name());
        if (u != null) {
            u.release();
        }
    }

    /** Requests of {@code tenant} in flight now. */
    public int inFlight(String tenant) {
        Use u = uses.get(tenant);
        return u == null ? 0 : u.inFlight;
    }

    /**
     * A request refused by a limit.
     *
     * @param limit           the limit's key: {@code requests_per_second}, {@code tokens_per_minute} or
     *                        {@code concurrent_requests}
     * @param message         what to tell the client
     * @param retryAfterNanos when the request would fit, ns &gt; 0
     */
    public record Refusal(String limit, String message, long retryAfterNanos) {
    }

    private static final class Use {
        private long at;
        private double requests = Double.NaN; // full on first use
        private double tokens = Double.NaN;
        private volatile int inFlight;

        Use(long now) {
            this.at = now;
        }

        synchronized Refusal take(Tenant t, long cost, long now) {
            double seconds = Math.max(0, now - at) / 1e9;
            at = now;
            double rps = t.requestsPerSecond();
            double perSecond = t.tokensPerMinute() / 60.0;
            double requestBurst = Math.max(1, rps);
            double tokenBurst = t.tokensPerMinute();
            requests = Double.isNaN(requests) ? requestBurst : Math.min(requestBurst, requests + seconds * rps);
            tokens = Double.isNaN(tokens) ? tokenBurst : Math.min(tokenBurst, tokens + seconds * perSecond);
            if (t.concurrentRequests() > 0 && inFlight >= t.concurrentRequests()) {
                return new Refusal("concurrent_requests", "tenant '" + t.name() + "' has " + inFlight
                        + " requests in flight, its limit (concurrent_requests: " + t.concurrentRequests() + ")",
                        Duration.ofSeconds(1).toNanos());
            }
            if (rps > 0 && requests < 1) {
                return new Refusal("requests_per_second", "tenant '" + t.name() + "' is over its limit of "
                        + Numbers.plain(rps) + " requests per second", nanosUntil(1 - requests, rps));
            }
            double need = Math.min(cost, tokenBurst); // a request larger than a minute's budget waits for a full one
            if (tokenBurst > 0 && tokens < need) {
                return new Refusal("tokens_per_minute", "tenant '" + t.name() + "' is over its limit of "
                        + t.tokensPerMinute() + " tokens per minute (this request counts " + cost + ")",
                        nanosUntil(need - tokens, perSecond));
            }
            if (rps > 0) {
                requests -= 1;
            }
            if (tokenBurst > 0) {
                tokens -= need;
            }
            inFlight++;
            return null;
        }

        synchronized void release() {
            if (inFlight > 0) {
                inFlight--;
            }
        }

        private static long nanosUntil(double missing, double perSecond) {
            return Math.max(1, (long) Math.ceil(missing / perSecond * 1e9));
        }
    }
}
