package dev.sextant.server.gateway;

import dev.sextant.request.DataPlaneStatus;
import dev.sextant.server.internal.Http;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.util.concurrent.EventExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;

/**
 * The gateway's probes in Kubernetes' convention, and its mode (docs/servers.md, "Probes"):
 *
 * <ul>
 *   <li>{@code GET /livez}: the process works. Every event loop runs a beat of its own every {@link #BEAT}; the
 *   gateway is live while each loop beat within {@link #LIVE_WITHIN}. A loop stuck in a task answers nothing on its
 *   connections while the others answer on theirs, so the probe that reaches a working loop must still say so.</li>
 *   <li>{@code GET /readyz}: the gateway can route. It holds a snapshot, that snapshot routes this gateway's
 *   cluster, and it is not draining; a gateway in fallback mode serves, so it is ready, and says its mode.</li>
 *   <li>The mode, {@code policy} or {@code fallback}: each change is logged once, by whichever notices it first (a
 *   request the data plane routes, or the gateway's check once a second), never per request.</li>
 * </ul>
 */
final class Probes {
    private static final Logger LOG = Logger.getLogger(Probes.class.getName());

    /** How often each event loop beats. */
    static final Duration BEAT = Duration.ofMillis(250);
    /** An event loop that has not beaten for this long is stuck: the gateway is not live. */
    static final Duration LIVE_WITHIN = Duration.ofSeconds(2);
    /** The response header that names the mode, on {@code /readyz} answers when a snapshot is held. */
    static final String MODE_HEADER = "x-sextant-mode";

    /** How the gateway routes: by the snapshot's policy, or by the fallback policy once the snapshot is too old. */
    enum Mode {
        POLICY, FALLBACK;

        /** The word docs, headers and {@code /healthz} use. */
        String word() {
            return name().toLowerCase(Locale.ROOT);
        }

        static Mode of(DataPlaneStatus status) {
            return status.fallback() ? FALLBACK : POLICY;
        }
    }

    /**
     * What {@code /readyz} says.
     *
     * @param state one of {@link #READY}, {@link #DRAINING}, {@link #NO_SNAPSHOT}, {@link #NO_ROUTES}
     * @param mode  the mode, or null before the first snapshot
     */
    record Readiness(String state, Mode mode) {
        static final String READY = "ready";
        static final String DRAINING = "draining";
        static final String NO_SNAPSHOT = "no snapshot";
        static final String NO_ROUTES = "no routes";

        boolean ready() {
            return READY.equals(state);
        }

        /**
         * From what the gateway holds: {@code status} of its data plane (null before the first snapshot), the classes
         * the snapshot routes at its cluster, and whether it is draining; draining comes first, as it is what the
         * load balancer must learn.
         */
        static Readiness of(DataPlaneStatus status, int ownClasses, boolean draining) {
            String state = draining ? DRAINING : status == null ? NO_SNAPSHOT : ownClasses == 0 ? NO_ROUTES : READY;
            return new Readiness(state, status == null ? null : Mode.of(status));
        }

        /** 200 when ready, else 503; the state on the body's first line, then the mode, also in its header. */
        FullHttpResponse response() {
            FullHttpResponse r = Http.response(ready() ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE,
                    Http.TEXT, state + "\n" + (mode == null ? "" : "mode: " + mode.word() + "\n"));
            if (mode != null) {
                r.headers().set(MODE_HEADER, mode.word());
            }
            return r;
        }
    }

    private volatile AtomicLongArray beats = new AtomicLongArray(0);
    private final AtomicReference<Mode> announced = new AtomicReference<>();

    /** Makes each of {@code loops} beat every {@link #BEAT}, from now on (the beats end with the loops). */
    void watch(Iterable<EventExecutor> loops) {
        List<EventExecutor> list = new ArrayList<>();
        loops.forEach(list::add);
        AtomicLongArray b = new AtomicLongArray(list.size());
        long now = System.nanoTime();
        for (int i = 0; i < list.size(); i++) {
            b.set(i, now);
            int loop = i;
            list.get(i).scheduleAtFixedRate(() -> b.set(loop, System.nanoTime()), BEAT.toNanos(), BEAT.toNanos(),
                    TimeUnit.NANOSECONDS);
        }
        beats = b;
    }

    /** {@code /livez} at {@code now} (ns, as {@link System#nanoTime()}): 200 {@code live}, or 503 naming the loop. */
    FullHttpResponse liveness(long now) {
        AtomicLongArray b = beats;
        for (int i = 0; i < b.length(); i++) {
            long since = now - b.get(i);
            if (since > LIVE_WITHIN.toNanos()) {
                return Http.response(HttpResponseStatus.SERVICE_UNAVAILABLE, Http.TEXT, String.format(Locale.ROOT,
                        "event loop %d stuck: no beat for %.1f s%n", i, since / 1e9));
            }
        }
        return Http.response(HttpResponseStatus.OK, Http.TEXT, "live\n");
    }

    /**
     * Logs the mode of {@code status} (null: no snapshot yet, nothing to say) when it changed since last logged: entering
     * fallback at SEVERE, leaving it at WARNING. A gateway that starts in policy mode says nothing here.
     */
    void observe(DataPlaneStatus status, Duration maxSnapshotAge) {
        if (status == null) {
            return;
        }
        Mode mode = Mode.of(status);
        Mode before = announced.getAndSet(mode);
        if (before == mode) {
            return;
        }
        long age = status.ageNanos() / 1_000_000_000L;
        if (mode == Mode.FALLBACK) {
            LOG.severe("FALLBACK MODE: snapshot " + status.version() + " is " + age + " s old (max_snapshot_age "
                    + maxSnapshotAge.toSeconds() + " s): keeping its weights and keys, spilling load beyond what it"
                    + " planned to the nearest allowed engines with room, not applying its shed fractions");
        } else if (before != null) {
            LOG.info("fallback mode ended: snapshot " + status.version() + " is " + age + " s old: routing by policy");
        }
    }
}
