package dev.sextant.server.gateway;

import dev.sextant.config.ConfigException;
import dev.sextant.request.Narrowing;
import dev.sextant.request.RequestMeta;
import dev.sextant.request.Ticker;
import dev.sextant.server.tenants.PresentedKey;
import dev.sextant.server.tenants.Tenant;
import dev.sextant.server.tenants.TenantLimits;
import dev.sextant.server.tenants.Tenants;
import dev.sextant.server.tenants.TenantsWatch;
import io.netty.util.AsciiString;
import java.util.List;
import java.util.logging.Logger;

/**
 * Who may send what through this gateway ({@code docs/tenants.md}): the tenants file in force (none: an open
 * gateway), each tenant's use of its limits, and the regions the gateway cluster requires. Decides on a request
 * before the data plane sees it: its tenant by its key, whether its model and residency are allowed, its residency
 * and priority narrowed, and whether its limits take it.
 */
final class Tenancy implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Tenancy.class.getName());
    /** The {@code tenant} label of requests without a valid key. */
    static final String UNKNOWN = "(unknown)";
    /**
     * Output tokens counted for a request that asks for no maximum ({@code max_tokens} and its kin absent), in a
     * tenant's tokens per minute.
     */
    static final long DEFAULT_OUTPUT_TOKENS = 256;
    /** Bytes of a request body counted as one prompt token (about four characters of English text a token). */
    static final int BYTES_PER_TOKEN = 4;
    /** The Azure OpenAI SDKs' header for the API key ({@link PresentedKey#API_KEY}). */
    static final AsciiString API_KEY = PresentedKey.API_KEY_HEADER;

    private final TenantsWatch watch;
    private final List<String> required;
    private final int defaultPriority;
    final TenantLimits limits;

    private Tenancy(TenantsWatch watch, List<String> required, int defaultPriority, Ticker ticker) {
        this.watch = watch;
        this.required = required.isEmpty() ? null : required;
        this.defaultPriority = defaultPriority;
        this.limits = new TenantLimits(ticker);
    }

    /** From the gateway's config: its tenants file read now (problems name file, line and field) and watched. */
    static Tenancy of(GatewayConfig config) {
        TenantsWatch w = null;
        if (config.tenantsFile() != null) {
            try {
                w = TenantsWatch.start(config.tenantsFile());
            } catch (ConfigException e) {
                throw new IllegalArgumentException("tenants_file: " + e.oneLine(), e);
            }
            Tenants t = w.current();
            LOG.info("gateway " + config.gatewayCluster() + ": tenants from " + config.tenantsFile() + ": "
                    + t.all().size() + " tenants, " + t.keys() + " keys; requests without a valid key get 401");
        } else {
            LOG.warning("gateway " + config.gatewayCluster() + " is OPEN: no tenants_file, so it takes requests from"
                    + " anyone, with the residency and priority their headers ask for"
                    + (config.residency().isEmpty() ? "" : " within the gateway's residency " + config.residency())
                    + " (docs/tenants.md)");
        }
        return new Tenancy(w, config.residency(), config.options().defaultPriority(), Ticker.system());
    }

    /** Whether requests need a key: a tenants file is in force. */
    boolean closed() {
        return watch != null;
    }

    /** The tenants file's watch, or null when open. */
    TenantsWatch watch() {
        return watch;
    }

    /** The tenant whose key the request presents, or null. */
    Tenant find(PresentedKey presented) {
        return watch.current().find(presented);
    }

    /**
     * The request's residency: its headers' regions (or its tenant's default) within its tenant's and this gateway
     * cluster's; null when nothing restricts it, empty when nothing may serve it.
     */
    List<String> residency(Tenant t, List<String> headers) {
        return Narrowing.residency(Narrowing.requested(headers), t == null ? null : t.defaultResidency(),
                t == null ? null : t.residency(), required);
    }

    /** The request's priority: its headers' lowest (or its tenant's default, or the gateway's), within its ceiling. */
    int priority(Tenant t, List<String> headers) {
        return Narrowing.priority(headers, t == null ? RequestMeta.NO_PRIORITY : t.defaultPriority(),
                t == null ? Narrowing.NO_CEILING : t.maxPriority(), defaultPriority);
    }

    /** Why a request whose residency came out empty may not be served: the sets that met, named. */
    String residencyRefusal(Tenant t, List<String> headers) {
        StringBuilder b = new StringBuilder("no region may serve this request: ");
        List<String> asked = Narrowing.requested(headers);
        String sep = "";
        if (asked != null) {
            b.append("x-sextant-residency asks for ").append(asked);
            sep = ", but ";
        } else if (t != null && t.defaultResidency() != null) {
            b.append("tenant '").append(t.name()).append("' defaults to ").append(t.defaultResidency());
            sep = ", but ";
        }
        if (t != null && t.residency() != null) {
            b.append(sep).append("tenant '").append(t.name()).append("' may be served only in ").append(t.residency());
            sep = sep.isEmpty() ? ", but " : " and ";
        }
        if (required != null) {
            b.append(sep).append("this gateway cluster keeps everything it receives in ").append(required);
        }
        return b.toString();
    }

    /** The tokens a request counts against its tenant's tokens per minute: its prompt estimated, and its output. */
    static long tokens(int bodyBytes, long maxTokens) {
        return (bodyBytes + BYTES_PER_TOKEN - 1) / BYTES_PER_TOKEN + (maxTokens >= 0 ? maxTokens : DEFAULT_OUTPUT_TOKENS);
    }

    @Override
    public void close() {
        if (watch != null) {
            watch.close();
        }
    }
}
