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

    private final URI uri;
    private final String token;
    private final Duration wait;
    private final HttpClient http;
    private volatile boolean closed;
    private Thread thread;

    LongPollSource(URI controlPlane, String gatewayCluster, String token, Duration wait) {
        if (wait == null || wait.isNegative() || wait.isZero()) {
            throw new IllegalArgumentException("wait: " + wait + " (expected: > 0)");
        }
        String base = controlPlane.toString().replaceAll("/+$", "");
        this.uri = URI.create(base + "/v1/snapshot?gateway=" + URLEncoder.encode(gatewayCluster, StandardCharsets.UTF_8)
                + "&wait=" + wait.toMillis() + "ms");
        this.token = token;
        this.wait = wait;
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
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

    private void loop(Consumer<Snapshot> listener) {
        Snapshot held = null;
        String etag = null;
        long backoffMs = 100;
        boolean reachable = true;
        long refusedVersion = -1; // the last older version refused, so that a control plane stuck on it is logged once
        while (!closed) {
            try {
                HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(wait.plusSeconds(10)).GET();
                if (token != null) {
                    b.header("authorization", "Bearer " + token);
                }
                if (etag != null) {
                    b.header("if-none-match", etag);
                }
                HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 304 && held != null) {
                    listener.accept(held);
                } else if (r.statusCode() == 200) {
                    Snapshot s = SnapshotJson.read(r.body(), uri.toString());
                    if (held != null && s.version() < held.version()) {
                        // The control plane answers at once while our ETag is not its own: without a pause this
                        // would be a busy loop against it for as long as it stays behind.
                        if (s.version() != refusedVersion) {
                            LOG.warning("control plane sent snapshot version " + s.version() + ", older than the held "
                                    + held.version() + "; refused, keeping " + held.version());
                            refusedVersion = s.version();
                        }
                        if (!pause(backoffMs)) {
                            return;
                        }
                        backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
                        continue;
                    } else {
                        refusedVersion = -1;
                        held = s;
                        etag = r.headers().firstValue("etag").orElse(null);
                        listener.accept(s);
                    }
                } else {
                    throw new IOException("HTTP " + r.statusCode() + ": " + abbreviate(r.body()));
                }
                if (!reachable) {
                    LOG.info("control plane " + uri.getAuthority() + " reachable again");
                    reachable = true;
                }
                backoffMs = 100;
            } catch (InterruptedException e) {
                return;
            } catch (IOException | SnapshotException | RuntimeException e) {
                if (closed) {
                    return;
                }
                if (reachable) {
                    LOG.log(Level.WARNING, "control plane " + uri.getAuthority()
                            + (e instanceof SnapshotException ? " sent an invalid snapshot (" : " unreachable (") + e
                            + "); serving from snapshot " + (held == null ? "none" : held.version()));
                    reachable = false;
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
