package dev.sextant.server.tenants;

import dev.sextant.request.Narrowing;
import dev.sextant.request.RequestMeta;
import dev.sextant.server.internal.Numbers;
import java.util.List;
import java.util.Set;

/**
 * One tenant of a gateway, as its tenants file describes it ({@code docs/tenants.md}). Its keys are not here: the
 * {@link Tenants} registry finds a tenant by the hash of a key.
 *
 * @param name              1 to 64 letters, digits, {@code .}, {@code _} or {@code -}; the {@code tenant} label of its
 *                          metrics
 * @param models            the models it may ask for; null for every model
 * @param residency         the regions its requests may be served in; null for any region
 * @param defaultResidency  the regions of a request that names none, within {@code residency}; null for
 *                          {@code residency}
 * @param maxPriority       the highest priority it may ask for (a higher one is served at this one);
 *                          {@link Narrowing#NO_CEILING} for no ceiling
 * @param defaultPriority   the priority of a request that names none; {@link RequestMeta#NO_PRIORITY} for the
 *                          gateway's default
 * @param weight            its weight in fair shares within a class, &gt; 0 and at most {@link #MAX_WEIGHT} (default 1)
 * @param requestsPerSecond most requests a second, sustained, with a burst of one second's worth; 0 for no limit, else
 *                          at least {@link #MIN_REQUESTS_PER_SECOND}
 * @param tokensPerMinute   most tokens a minute (prompt estimated at admission, plus the output asked for), with a
 *                          burst of one minute's worth; 0 for no limit
 * @param concurrentRequests most requests in flight at once, streaming or not; 0 for no limit
 */
public record Tenant(String name, Set<String> models, List<String> residency, List<String> defaultResidency,
                     int maxPriority, int defaultPriority, double weight, double requestsPerSecond,
                     long tokensPerMinute, int concurrentRequests) {
    /**
     * The largest weight: weights only compare tenants, and a million to one is beyond any share a shed can honour,
     * while sums of a few larger ones could overflow to infinity and make every tenant look above its share.
     */
    public static final double MAX_WEIGHT = 1e6;
    /**
     * The smallest limit of requests per second but 0: one a day. A slower one is a ban (take the tenant's keys or
     * models away instead), and a client would be told to retry in years.
     */
    public static final double MIN_REQUESTS_PER_SECOND = 1.0 / 86_400;
    /** What {@code limits.requests_per_second} may be, as a problem with it says. */
    static final String REQUESTS_PER_SECOND_EXPECTED = " (expected: 0 for no limit, or a number of at least 1/86400, one"
            + " a day)";

    public Tenant {
        if (name == null || !name.matches("[A-Za-z0-9._-]{1,64}")) {
            throw new IllegalArgumentException("name: '" + name + "' (expected: 1 to 64 letters, digits, '.', '_' or"
                    + " '-')");
        }
        models = models == null ? null : Set.copyOf(models);
        residency = residency == null ? null : List.copyOf(residency);
        defaultResidency = defaultResidency == null ? null : List.copyOf(defaultResidency);
        if (residency != null && defaultResidency != null && !residency.containsAll(defaultResidency)) {
            throw new IllegalArgumentException("default_residency: " + defaultResidency + " (expected: regions within"
                    + " residency " + residency + ")");
        }
        if (defaultPriority != RequestMeta.NO_PRIORITY && defaultPriority > maxPriority) {
            throw new IllegalArgumentException("default_priority: " + defaultPriority + " (expected: <= max_priority "
                    + maxPriority + ")");
        }
        if (!(weight > 0) || weight > MAX_WEIGHT) {
            throw new IllegalArgumentException("weight: " + weight + " (expected: a number > 0, at most "
                    + Numbers.plain(MAX_WEIGHT) + ")");
        }
        if (!validRequestsPerSecond(requestsPerSecond)) {
            throw new IllegalArgumentException("limits.requests_per_second: " + requestsPerSecond
                    + REQUESTS_PER_SECOND_EXPECTED);
        }
        if (tokensPerMinute < 0) {
            throw new IllegalArgumentException("limits.tokens_per_minute: " + tokensPerMinute
                    + " (expected: >= 0, 0 for no limit)");
        }
        if (concurrentRequests < 0) {
            throw new IllegalArgumentException("limits.concurrent_requests: " + concurrentRequests
                    + " (expected: >= 0, 0 for no limit)");
        }
    }

    /** Whether {@code rps} may be a tenant's {@code limits.requests_per_second}: 0, or finite and at least one a day. */
    static boolean validRequestsPerSecond(double rps) {
        return (rps == 0 || rps >= MIN_REQUESTS_PER_SECOND) && !Double.isInfinite(rps);
    }

    /** A tenant without restrictions or limits (tests, and the open gateway's view of its clients). */
    public static Tenant unrestricted(String name) {
        return new Tenant(name, null, null, null, Narrowing.NO_CEILING, RequestMeta.NO_PRIORITY, 1, 0, 0, 0);
    }

    /** Whether it may ask for {@code model}. */
    public boolean allows(String model) {
        return models == null || models.contains(model);
    }
}
