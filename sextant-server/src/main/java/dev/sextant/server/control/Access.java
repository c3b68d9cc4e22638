package dev.sextant.server.control;

import dev.sextant.server.auth.Authenticator;
import dev.sextant.server.auth.BearerToken;
import dev.sextant.server.auth.CredentialsFile;
import dev.sextant.server.auth.Principal;
import dev.sextant.server.internal.Http;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Who may ask the control plane what: the bearer token a request presents names a principal (the shared token's
 * operator, or one of the credentials file's principals), and a request refused for its token is answered and
 * counted here. The credentials file is read again on the policy thread when it changed.
 */
final class Access {
    /** The control plane's logger: one name for operators to set, whichever part of it speaks. */
    private static final Logger LOG = Logger.getLogger(ControlPlane.class.getName());
    /** The reasons of {@code sextant_control_auth_refusals_total}: a fixed set, so its labels stay bounded. */
    static final List<String> AUTH_REFUSALS = List.of("missing", "malformed", "unknown_token", "ambiguous",
            "other_gateway_cluster", "operator_only");

    /** Who a request's token speaks for: the shared token's operator, or the credentials file's principals. */
    private final Authenticator authenticator;
    /** The credentials file, or null in the shared-token mode. */
    private final CredentialsFile credentials;
    private final Counter unauthorized;
    /** Requests refused for their token (401) or for what their token may do (403), by reason. */
    private final Map<String, Counter> authRefusals = new HashMap<>();
    private final Counter credentialsReloads;
    private final Counter credentialsReloadFailures;

    Access(ControlPlaneConfig config, MeterRegistry registry) {
        this.authenticator = config.authenticator();
        this.credentials = config.credentials();
        this.unauthorized = Counter.builder("sextant.control.unauthorized.requests")
                .description("requests refused for a missing or wrong bearer token").register(registry);
        for (String reason : AUTH_REFUSALS) {
            authRefusals.put(reason, Counter.builder("sextant.control.auth.refusals").tag("reason", reason)
                    .description("requests refused for their bearer token, by reason: missing (no Authorization), "
                            + "malformed (another scheme, or no token), unknown_token (401: not, or no longer, in force), "
                            + "ambiguous (401: repeated Authorization headers with different tokens); "
                            + "other_gateway_cluster (403: a gateway cluster's token reading or reporting for another), "
                            + "operator_only (403: a gateway cluster's token on an operator's endpoint)")
                    .register(registry));
        }
        this.credentialsReloads = Counter.builder("sextant.control.credentials.reloads")
                .description("changes of the credentials file read and put in force").register(registry);
        this.credentialsReloadFailures = Counter.builder("sextant.control.credentials.reload.failures")
                .description("changes of the credentials file refused as invalid or unreadable (the credentials in "
                        + "force stay)").register(registry);
        Gauge.builder("sextant.control.credentials.invalid",
                        () -> credentials != null && credentials.error() != null ? 1 : 0)
                .description("1 while the credentials file on disk is invalid or unreadable and the last valid one is "
                        + "in force").register(registry);
    }

    /** Whether requests to {@code path} need a token: every endpoint but the probes and the metrics. */
    static boolean guarded(String path) {
        return path.equals("/v1/snapshot") || path.equals("/v1/explain") || path.equals("/v1/reports");
    }

    /** Who {@code authorization} (a request's header, or null) speaks for, or null for nobody known. */
    Principal authenticate(String authorization) {
        return authenticator.authenticate(authorization);
    }

    /**
     * The 401 to a request whose {@code authorization} names nobody this control plane knows, counted by why. It says
     * nothing else, not even whether the method fits, and never repeats what was sent.
     */
    FullHttpResponse unauthorized(String authorization) {
        unauthorized.increment();
        authRefusals.get(authorization == null ? "missing"
                : BearerToken.presented(authorization) == null ? "malformed" : "unknown_token")
                .increment();
        return Http.unauthorized();
    }

    /** The 401 to a request whose repeated {@code Authorization} headers present different tokens, counted. */
    FullHttpResponse ambiguous() {
        unauthorized.increment();
        authRefusals.get("ambiguous").increment();
        return Http.unauthorized();
    }

    /** The 403 to a known token asking for what it may not do ({@code reason}: one of {@link #AUTH_REFUSALS}). */
    FullHttpResponse forbidden(String reason, String message) {
        authRefusals.get(reason).increment();
        return Http.error(HttpResponseStatus.FORBIDDEN, "permission_error", "forbidden", message, null);
    }

    /** Reads the credentials file again when it changed (the tokens of the shared-token mode reload themselves). */
    void reloadCredentials() {
        if (credentials == null) {
            return;
        }
        try {
            switch (credentials.reloadIfChanged()) {
                case RELOADED -> credentialsReloads.increment();
                case REFUSED -> credentialsReloadFailures.increment();
                case UNCHANGED, RESTORED -> { }
            }
        } catch (RuntimeException e) { // never stops the policy step that follows
            credentialsReloadFailures.increment();
            LOG.log(Level.SEVERE, "CREDENTIALS RELOAD FAILED, keeping the credentials in force: " + e, e);
        }
    }

    /** Why the credentials file on disk is not in force, or null (also null in the shared-token mode). */
    String credentialsError() {
        return credentials == null ? null : credentials.error();
    }
}
