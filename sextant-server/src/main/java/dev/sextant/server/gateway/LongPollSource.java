package dev.sextant.server.gateway;

import dev.sextant.config.SnapshotException;
import dev.sextant.config.SnapshotJson;
import dev.sextant.snapshot.Snapshot;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/** The control plane's long-poll client; see {@link SnapshotSource#longPoll}. */
final class LongPollSource implements SnapshotSource {
    private static final Logger LOG = Logger.getLogger(LongPollSource.class.getName());
    private static final long MAX_BACKOFF_MS = 5_000;
    /** How long past {@code wait} the answer's head may take (the request's own timeout). */
    private static final Duration HEAD_SLACK = Duration.ofSeconds(10);
    /**
     * How long its body may take after that: the JDK client's timeout ends at the head, and a body that stops (the
     * control plane stopped, a connection that went half-open mid-transfer) would hold the poll for good, the
     * gateway on its snapshot of then. A minute carries the largest snapshot (tens of MB) over a slow link.
     */
    private static final Duration BODY_ALLOWANCE = Duration.ofSeconds(60);
    /**
     * The largest answer read: a gateway cluster's view of the largest fleet measured is 2.4 MB (BENCHMARKS.md); a
     * control_plane URL that names something else must not fill the gateway's heap.
     */
    static final long MAX_SNAPSHOT_BYTES = 256L << 20;

    private final URI uri;
    /** The same without {@code wait}: answered at once, to confirm a snapshot held from the cache. */
    private final URI confirm;
    private final dev.sextant.server.auth.BearerToken token;
    private final Duration wait;
    private final Duration headSlack;
    private final Duration bodyAllowance;
    private final HttpClient http;
    private final java.util.concurrent.atomic.AtomicLong refusals = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean closed;
    private volatile Snapshot kept; // from the gateway's cache: asked after, older ones refused
    private Thread thread;

    LongPollSource(URI controlPlane, String gatewayCluster, dev.sextant.server.auth.BearerToken token, Duration wait,
                   dev.sextant.server.tls.ClientTls tls) {
        this(controlPlane, gatewayCluster, token, wait, tls, HEAD_SLACK, BODY_ALLOWANCE);
    }

    /** With other allowances for the answer's head beyond {@code wait} and for its body (tests). */
    LongPollSource(URI controlPlane, String gatewayCluster, dev.sextant.server.auth.BearerToken token, Duration wait,
                   dev.sextant.server.tls.ClientTls tls, Duration headSlack, Duration bodyAllowance) {
        dev.sextant.server.internal.Http.positive("long_poll_wait", wait);
        this.headSlack = headSlack;
        this.bodyAllowance = bodyAllowance;
        String base = controlPlane.toString().replaceAll("/+$", "");
        this.confirm = URI.create(base + "/v1/snapshot?gateway="
                + URLEncoder.encode(gatewayCluster, StandardCharsets.UTF_8));
        this.uri = URI.create(confirm + "&wait=" + wait.toMillis() + "ms");
        this.token = token;
        this.wait = wait;
        // never follows a redirect: snapshots come from the configured URL only
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2))
                .followRedirects(HttpClient.Redirect.NEVER)
                .sslContext(dev.sextant.server.tls.TlsContexts.jdkClient(tls)).build();
    }

    @Override
    public synchronized void start(Consumer<Snapshot> listener) {
        if (thread != null) {
            throw new IllegalStateException("already started");
        }
        thread = new Thread(() -> loop(listener), "sextant-snapshot-poll");
        thread.setDaemon(true);
        thread.start();
    }

    @Override
    public synchronized void hold(Snapshot kept) {
        if (thread != null) {
            throw new IllegalStateException("already started");
        }
        this.kept = kept;
    }

    private void loop(Consumer<Snapshot> listener) {
        Snapshot held = kept;
        String etag = kept == null ? null : dev.sextant.server.internal.Http.etag(kept);
        long backoffMs = 100;
        boolean reachable = true;
        Class<?> lastProblem = null; // logged once per kind, so a timeout does not hide a certificate refusal
        String lastRefusal = null; // a control plane stuck on one refused snapshot is logged once for it
        // A snapshot from the cache is asked about without waiting: when the control plane holds the same, its
        // 304 confirms it now (and a cache confirmed long ago leaves fallback mode), not after a long-poll's wait.
        boolean confirming = kept != null;
        while (!closed) {
            try {
                HttpRequest.Builder b = HttpRequest.newBuilder(confirming ? confirm : uri).timeout(wait.plus(headSlack))
                        .GET();
                if (token != null) {
                    b.header("authorization", "Bearer " + token.current());
                }
                if (etag != null) {
                    b.header("if-none-match", etag);
                }
                HttpResponse<String> r = dev.sextant.server.internal.WholeAnswer.send(http, b.build(),
                        dev.sextant.server.internal.BoundedBody.ofString(MAX_SNAPSHOT_BYTES),
                        wait.plus(headSlack).plus(bodyAllowance));
                if (r.statusCode() == 304 && held != null) {
                    // only a 304 for the ETag asked about confirms the held snapshot (and resets its age): one for
                    // another ETag says nothing about ours, and would hide a control plane that went astray
                    String answered = r.headers().firstValue("etag").orElse(null);
                    if (!java.util.Objects.equals(answered, etag)) {
                        throw new IOException("HTTP 304 for ETag " + answered + ", not the held " + etag);
                    }
                    listener.accept(held);
                } else if (r.statusCode() == 200) {
                    Snapshot s = SnapshotJson.read(r.body(), uri.toString());
                    String refusal = refusal(held, s);
                    if (refusal != null) {
                        refusals.incrementAndGet();
                        if (!refusal.equals(lastRefusal)) {
                            LOG.severe("SNAPSHOT REFUSED from " + uri.getAuthority() + ": " + refusal + "; keeping "
                                    + (held == null ? "none" : held.version()));
                            lastRefusal = refusal;
                        }
                        // The control plane answers this ETag with the same document again at once: without the
                        // back-off this would be a busy loop against it for as long as it stays behind.
                        throw new RefusedSnapshot(refusal);
                    } else {
                        lastRefusal = null;
                        held = s;
                        etag = r.headers().firstValue("etag").orElse(null);
                        listener.accept(s);
                    }
                } else {
                    throw new IOException("HTTP " + r.statusCode() + ": " + abbreviate(r.body()));
                }
                confirming = false;
                if (!reachable) {
                    LOG.info("control plane " + uri.getAuthority() + " reachable again");
                    reachable = true;
                    lastProblem = null;
                }
                backoffMs = 100;
            } catch (InterruptedException e) {
                return;
            } catch (IOException | SnapshotException | RuntimeException e) {
                if (closed) {
                    return;
                }
                if ((reachable || e.getClass() != lastProblem) && !(e instanceof RefusedSnapshot)) {
                    LOG.log(Level.WARNING, "control plane " + uri.getAuthority()
                            + (e instanceof SnapshotException ? " sent an invalid snapshot (" : " unreachable (") + e
                            + "); " + (held == null ? "no snapshot yet, so the gateway cannot serve"
                                    : "serving from snapshot " + held.version()));
                    reachable = false;
                    lastProblem = e.getClass();
                }
                if (!pause(backoffMs)) {
                    return;
                }
                backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
            }
        }
    }

    /** Sleeps between polls of a control plane that is unreachable or behind; false when interrupted (closed). */
    private static boolean pause(long ms) {
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException e) {
            return false;
        }
    }

    /** Why {@code next} may not follow {@code held}, or null when it may (no snapshot held, or a newer version). */
    static String refusal(Snapshot held, Snapshot next) {
        if (!next.hash().equals(next.contentHash())) {
            return "version " + next.version() + " carries hash " + prefix(next.hash())
                    + " but its content hashes to " + prefix(next.contentHash()) + " (altered or corrupted)";
        }
        if (held == null || next.version() > held.version()) {
            return null;
        }
        if (next.version() < held.version()) {
            return "version " + next.version() + " is older than the held " + held.version();
        }
        if (!next.equals(held)) {
            return "version " + next.version() + " (hash " + prefix(next.hash()) + ") differs from the held version "
                    + held.version() + " (hash " + prefix(held.hash()) + ")";
        }
        return null;
    }

    private static String prefix(String hash) {
        return hash.length() > 16 ? hash.substring(0, 16) : hash;
    }

    /** A snapshot that was refused; handled like an unreachable control plane (back-off), logged once by itself. */
    private static final class RefusedSnapshot extends RuntimeException {
        RefusedSnapshot(String message) {
            super(message, null, false, false);
        }
    }

    /** A long-poll is answered within its wait: a snapshot, or "not modified" confirming the held one. */
    @Override
    public Duration cadence() {
        return wait;
    }

    @Override
    public long refusals() {
        return refusals.get();
    }

    private static String abbreviate(String s) {
        return s.length() > 200 ? s.substring(0, 200) + "…" : s;
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (thread != null) {
            thread.interrupt();
        }
    }
}
