package dev.sextant.server.control;

import dev.sextant.control.ControlLoop;
import dev.sextant.control.Step;
import dev.sextant.request.Ticker;
import dev.sextant.server.internal.Versions;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * How a snapshot the loop decided on becomes the fleet's (policy path): fenced by {@link Leadership} beyond this
 * process, then published to this control plane's gateways and written to the state file. It keeps the versions
 * monotone for every gateway: a replica that wins leadership takes over above every version published before, and a
 * gateway holding a version at or above the current one (this control plane restarted) is caught up with. Called on
 * the policy thread, but for {@link #refusedVersion} and the volatile {@link #solved()}.
 */
final class Publication {
    /** The control plane's logger: one name for operators to set, whichever part of it speaks. */
    private static final Logger LOG = Logger.getLogger(ControlPlane.class.getName());

    /** A published snapshot with the topology the loop solved it for (estimates applied). */
    record Solved(Topology topology, Snapshot snapshot) {
    }

    private final ControlLoop loop;
    private final InMemoryPublisher publisher;
    /** Whether this replica may publish; {@link Leadership#alone()} for a control plane that is the only one. */
    private final Leadership leadership;
    /** The state file, or null without one. */
    private final StateFile state;
    /** Hashes the gateway clusters' views of each publication, remembering the engines' texts between them. */
    private final Snapshot.Hasher viewHasher;
    private final PolicyAlarm alarm;
    private final Ticker ticker;
    private final Map<String, Counter> publications = new HashMap<>();
    private final Counter refusedVersions;
    private final AtomicLong lastRefusalLog = new AtomicLong(Long.MIN_VALUE);
    /** True once this replica took over as leader and until it finds it lost leadership (policy thread only). */
    private boolean led;
    /** The last snapshot published, with the topology the loop solved it for (estimates applied). */
    private volatile Solved solved;

    Publication(ControlLoop loop, InMemoryPublisher publisher, Leadership leadership, StateFile state,
                Snapshot.Hasher viewHasher, PolicyAlarm alarm, Ticker ticker, MeterRegistry registry) {
        this.loop = loop;
        this.publisher = publisher;
        this.leadership = leadership;
        this.state = state;
        this.viewHasher = viewHasher;
        this.alarm = alarm;
        this.ticker = ticker;
        this.led = leadership.leading(); // alone: from the start; a replica: once it won and took over
        this.refusedVersions = Counter.builder("sextant.control.refused.versions")
                .description("snapshot polls whose If-None-Match claimed a version above " + Versions.MAX_ADOPTED
                        + " (not adopted: forged or corrupt)").register(registry);
        for (String kind : List.of("first", "change", "gain", "catch_up", "takeover")) {
            publications.put(kind, Counter.builder("sextant.control.publications").tag("kind", kind)
                    .description("snapshots published (a new version for the gateways), by why: first, change (one "
                            + "the loop publishes whatever the gain: the fleet's shape, an engine out of or back in "
                            + "service, a held snapshot that no longer fits), gain (above the threshold), catch_up (the "
                            + "same content above a version a gateway held), takeover (a replica that just won leadership, above every "
                            + "version published before)").register(registry));
        }
    }

    /** Whether this replica publishes now: it leads, and took over. */
    boolean led() {
        return led;
    }

    /** The last snapshot published with the topology it was solved for; null before the first. */
    Solved solved() {
        return solved;
    }

    /**
     * Follows leadership at each tick: a leader that lost it says so and publishes nothing more; a replica that just
     * won it takes over, running {@code takeoverStep} (a loop step triggered by the takeover) on the way.
     */
    void followLeadership(Runnable takeoverStep) {
        if (!leadership.leading()) {
            if (led) {
                led = false;
                LOG.warning("no longer the leader: keeps taking signals, publishes nothing");
            }
        } else if (!led) {
            takeOver(takeoverStep);
        }
    }

    /**
     * This replica just won leadership: its loop's versions go on above every version any leader reserved, it steps
     * on its warm estimates, and publishes what it holds then whatever the gain (the gateways hold the previous
     * leader's snapshot, which this loop never saw).
     */
    private void takeOver(Runnable takeoverStep) {
        long floor = Math.max(leadership.highestVersion(), publisher.current().version());
        led = true;
        Snapshot held = loop.published();
        if (held.version() < floor) {
            loop.adopt(held.sealed(floor));
        }
        takeoverStep.run();
        if (!led || publisher.current().version() > floor) {
            return; // deposed already, or the step published
        }
        Snapshot next = republish(loop.published(), floor + 1, "takeover");
        if (next == null) {
            return;
        }
        LOG.warning("took over as leader: published snapshot " + next.version() + " (above version " + floor + ")");
    }

    /**
     * Publishes the snapshot of step {@code s}, which the loop decided to publish, counted by the gain the loop gave
     * it; false when a leader's publication was refused (a replica's start snapshot, before it leads, stays its own:
     * it is not the fleet's, and is not fenced).
     */
    boolean publish(Step s) {
        Snapshot next = s.snapshot();
        if (led && !publishFenced(next)) {
            return false;
        }
        publishHere(next, kind(s));
        return true;
    }

    /**
     * Publishes {@code content} again as {@code version} (the loop adopts it), counted as {@code kind}; null when the
     * publication was refused.
     */
    private Snapshot republish(Snapshot content, long version, String kind) {
        Snapshot next = content.sealed(version, viewHasher);
        loop.adopt(next);
        if (!publishFenced(next)) {
            return null;
        }
        publishHere(next, kind);
        return next;
    }

    /** Publishes {@code next} to this control plane's gateways and the state file, counted as {@code kind}. */
    private void publishHere(Snapshot next, String kind) {
        publisher.publish(next);
        solved = new Solved(loop.publishedFor(), loop.published());
        if (state != null) {
            state.save(next); // on the state file's own thread
        }
        publications.get(kind).increment();
    }

    /**
     * Publishes {@code next} beyond this process, if this replica still leads; false when refused (deposed, or the
     * store failed): it then publishes nothing until it wins again and takes over, which puts its versions above
     * whatever was published meanwhile.
     */
    private boolean publishFenced(Snapshot next) {
        try {
            leadership.publish(next);
            return true;
        } catch (Leadership.Deposed e) {
            led = false;
            LOG.warning("snapshot " + next.version() + " not published: " + e.getMessage());
            return false;
        } catch (RuntimeException e) {
            led = false;
            LOG.log(Level.SEVERE, "snapshot " + next.version() + " not published: " + e, e);
            return false;
        }
    }

    /** A publication's kind for its counter, from the gain the loop gave it. */
    private static String kind(Step s) {
        return Double.isNaN(s.gainMs()) ? "first" : Double.isInfinite(s.gainMs()) ? "change" : "gain";
    }

    /**
     * A gateway holds version {@code held}: republishes the current snapshot above it when it is at or above the
     * current one (see {@link ControlPlane#catchUp}); a failure raises the policy alarm.
     */
    void catchUp(long held) {
        try {
            Snapshot current = publisher.current();
            if (current == null || held < current.version() || !Versions.adoptable(held)) {
                return;
            }
            if (!led) {
                return; // a standby's versions are not the fleet's: the leader catches up
            }
            Snapshot next = republish(current, held + 1, "catch_up");
            if (next == null) {
                return;
            }
            LOG.warning("a gateway holds snapshot version " + held + ", at or above this control plane's "
                    + current.version() + " (restarted?): republished snapshot " + current.version()
                    + " as version " + next.version());
        } catch (RuntimeException e) {
            alarm.failed("catching up with version " + held + " failed: " + e, e);
        }
    }

    /**
     * A poll's {@code If-None-Match} claims a version above {@link Versions#MAX_ADOPTED}: not adopted, counted, and
     * logged at most once a minute (a client repeating it must not flood the log). Any thread.
     */
    void refusedVersion(long claimed) {
        refusedVersions.increment();
        long now = ticker.nanos();
        long last = lastRefusalLog.get();
        if ((last == Long.MIN_VALUE || now - last >= TimeUnit.MINUTES.toNanos(1))
                && lastRefusalLog.compareAndSet(last, now)) {
            LOG.warning("VERSION REFUSED: a snapshot poll's If-None-Match claims "
                    + Versions.refusal("snapshot", claimed) + "; answered with snapshot " + publisher.current().version()
                    + ", not adopted (" + (long) refusedVersions.count() + " such polls so far)");
        }
    }
}
