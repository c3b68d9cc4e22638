package dev.sextant.request;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * What a request may ask for, given who sent it and where it arrived: headers may only narrow (docs/design.md §9).
 *
 * <p>Residency is the intersection of every set that restricts it: the tenant's allowed regions, the regions the
 * gateway cluster requires for everything it receives, and the regions the client names (every
 * {@code x-sextant-residency} header, each one narrowing, so a blank or wider header added before another cancels
 * nothing). Without a header the tenant's default residency stands in for it. A set that is absent restricts
 * nothing; an intersection that is empty allows nothing (the gateway answers 403).
 *
 * <p>Priority is the lowest of the {@code x-sextant-priority} headers (the tenant's default, else the gateway's,
 * when none is an integer), capped at the tenant's ceiling: a client above its ceiling is served at the ceiling.
 *
 * <p>Regions are kept in the order of the first set that restricts them, so the same inputs give the same list.
 */
public final class Narrowing {
    /** The ceiling of a tenant without one. */
    public static final int NO_CEILING = Integer.MAX_VALUE;

    private Narrowing() {
    }

    /**
     * The regions every non-blank {@code x-sextant-residency} header names (each comma-separated, trimmed), or null
     * when no header names any: the client restricts nothing.
     *
     * @param headerValues the values of every {@code x-sextant-residency} header, in order; may be empty
     */
    public static List<String> requested(List<String> headerValues) {
        List<String> out = null;
        for (String v : headerValues) {
            List<String> named = HttpFields.residency(v);
            if (!named.isEmpty()) {
                out = out == null ? named : within(out, named);
            }
        }
        return out;
    }

    /**
     * The request's residency: ({@code requested}, else {@code tenantDefault}) ∩ {@code tenantAllowed} ∩
     * {@code gatewayRequired}, each null when it restricts nothing.
     *
     * @return null when nothing restricts the request (any region, as a request without a header had before tenants);
     *         an empty list when the sets have no region in common (nothing may serve it); else the regions
     */
    public static List<String> residency(List<String> requested, Collection<String> tenantDefault,
                                         Collection<String> tenantAllowed, Collection<String> gatewayRequired) {
        List<String> out = requested != null ? requested : tenantDefault == null ? null : List.copyOf(tenantDefault);
        out = narrowed(out, tenantAllowed);
        return narrowed(out, gatewayRequired);
    }

    /**
     * The request's priority: the lowest integer among {@code headerValues} (others ignored), else
     * {@code tenantDefault}, else {@code gatewayDefault}; never above {@code ceiling}.
     *
     * @param tenantDefault {@link RequestMeta#NO_PRIORITY} when the tenant has none
     * @param ceiling       {@link #NO_CEILING} when the tenant has none
     */
    public static int priority(List<String> headerValues, int tenantDefault, int ceiling, int gatewayDefault) {
        int p = RequestMeta.NO_PRIORITY;
        for (String v : headerValues) {
            int asked = HttpFields.priority(v);
            if (asked != RequestMeta.NO_PRIORITY) {
                p = p == RequestMeta.NO_PRIORITY ? asked : Math.min(p, asked);
            }
        }
        if (p == RequestMeta.NO_PRIORITY) {
            p = tenantDefault != RequestMeta.NO_PRIORITY ? tenantDefault : gatewayDefault;
        }
        return Math.min(p, ceiling);
    }

    private static List<String> narrowed(List<String> current, Collection<String> by) {
        if (by == null) {
            return current;
        }
        return current == null ? List.copyOf(by) : within(current, by);
    }

    private static List<String> within(List<String> current, Collection<String> by) {
        List<String> out = new ArrayList<>(current.size());
        for (String r : current) {
            if (by.contains(r)) {
                out.add(r);
            }
        }
        return out;
    }
}
