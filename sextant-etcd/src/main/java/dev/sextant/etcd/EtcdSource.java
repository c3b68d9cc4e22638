package dev.sextant.etcd;

import dev.sextant.config.SnapshotException;
import dev.sextant.server.gateway.SnapshotSource;
import dev.sextant.snapshot.Snapshot;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.logging.Logger;

/**
 * A gateway's snapshots from etcd (docs/etcd.md): its gateway cluster's view under {@code P/views/<id>}, read when a
 * watch says it changed and at least every {@code confirmEvery}. A watch starts at the revision after the read made
 * before it, so a write between that read and the watch's registration in etcd is still an event of the watch; when
 * etcd compacted that revision meanwhile, it cancels the watch, and the view is read again and watched from there. A
 * read that finds the held version while a leader holds its lease confirms the held snapshot (which resets the data
 * plane's snapshot age, as a long-poll's 304 does).
 * While etcd is unreachable it keeps the last snapshot (the gateway keeps serving from it), and tries again with a
 * back-off up to 5 s. It also keeps the list of control planes (the leader first) that the gateway reports to.
 */
final class EtcdSource implements SnapshotSource {
    private static final Logger LOG = Logger.getLogger(EtcdSource.class.getName());
    private static final long MAX_BACKOFF_MS = 5_000;

    private final Client client;
    private final Keys keys;
    private final String gatewayCluster;
    private final ByteSequence viewKey;
    private final Duration confirmEvery;
    private final Clock clock;
    private final BlockingQueue<Read> wake = new LinkedBlockingQueue<>();
    private final AtomicLong refusals = new AtomicLong();
    private final CompositeMeterRegistry meters = new CompositeMeterRegistry();
    private final Map<Read, Timer> lag = new EnumMap<>(Read.class);
    private final AtomicLong watchesEnded = new AtomicLong();
    private final AtomicLong watchesCompacted = new AtomicLong();
    private final Runnable beforeWatch;
    private volatile List<URI> controlPlanes = List.of();
    private volatile boolean reachable = true;
    private volatile boolean closed;
    private volatile Snapshot kept;
    private Thread thread;
    // the live watch of the view (null: none, made after the next read), the number of the newest watch and of the
    // last that ended; never held while calling the client, whose callbacks come under its own lock
    private final Object watchLock = new Object();
    private Watch.Watcher watcher;
    private long watches;
    private long ended;

    EtcdSource(Client client, EtcdOptions options, String gatewayCluster, Duration confirmEvery, Clock clock) {
        this(client, options, gatewayCluster, confirmEvery, clock, () -> { });
    }

    /**
     * As the other constructor; {@code beforeWatch} runs between a read and the request for the watch that starts
     * after it (tests: what it writes is an event of that watch).
     */
    EtcdSource(Client client, EtcdOptions options, String gatewayCluster, Duration confirmEvery, Clock clock,
               Runnable beforeWatch) {
        this.client = client;
        this.keys = new Keys(options.prefix());
        this.gatewayCluster = gatewayCluster;
        this.viewKey = keys.view(gatewayCluster);
        this.confirmEvery = confirmEvery;
        this.clock = clock;
        this.beforeWatch = beforeWatch;
        for (Read r : Read.values()) {
            lag.put(r, Timer.builder("sextant.etcd.watch.lag").tag("read", r.tag)
                    .description("from a view's publication (the leader's clock) to its delivery here (this gateway's),"
                            + " by what prompted the read that took it")
                    .publishPercentileHistogram().register(meters));
        }
        FunctionCounter.builder("sextant.etcd.watch.ended", watchesEnded, AtomicLong::get)
                .description("watches of the view that ended or failed, each made again").register(meters);
        FunctionCounter.builder("sextant.etcd.watch.compacted", watchesCompacted, AtomicLong::get)
                .description("of the watches that ended, those etcd cancelled because the revision they started from"
                        + " was compacted; each made again after a new read").register(meters);
        Gauge.builder("sextant.etcd.reachable", this, s -> s.reachable ? 1 : 0)
                .description("1 while etcd answers this gateway's reads").register(meters);
        FunctionCounter.builder("sextant.etcd.refused.views", refusals, AtomicLong::get)
                .description("views refused: older than the held one, the held version with other content, or "
                        + "not matching their hash").register(meters);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        meters.add(registry);
    }

    @Override
    public synchronized void hold(Snapshot held) {
        if (thread != null) {
            throw new IllegalStateException("already started");
        }
        kept = held;
    }

    @Override
    public synchronized void start(Consumer<Snapshot> listener) {
        if (thread != null) {
            throw new IllegalStateException("already started");
        }
        thread = new Thread(() -> loop(listener), "sextant-etcd-watch");
        thread.setDaemon(true);
        thread.start();
    }

    /** The view is read at least every {@code confirmEvery}, and a read while a leader holds its lease confirms it. */
    @Override
    public Duration cadence() {
        return confirmEvery;
    }

    @Override
    public boolean findsControlPlanes() {
        return true;
    }

    @Override
    public List<URI> controlPlanes() {
        return controlPlanes;
    }

    /** False from a failed read of etcd until the next that succeeds. */
    boolean reachable() {
        return reachable;
    }

    @Override
    public long refusals() {
        return refusals.get();
    }

    private void loop(Consumer<Snapshot> listener) {
        Snapshot held = kept;
        long decodedRevision = 0; // the mod revision of the view last decoded
        long backoffMs = 100;
        String lastProblem = null;
        Read prompt = Read.FIRST;
        while (!closed) {
            try {
                GetResponse view = Clients.await(client.getKVClient().get(viewKey));
                watchAfter(view.getHeader().getRevision());
                boolean leader = readControlPlanes();
                if (!view.getKvs().isEmpty()) {
                    KeyValue kv = view.getKvs().get(0);
                    if (held != null && kv.getModRevision() == decodedRevision) {
                        if (leader) {
                            listener.accept(held); // still the current one, and a control plane leads: confirmed
                        }
                    } else {
                        byte[] value = kv.getValue().getBytes();
                        long version = ViewCodec.header(value).version();
                        Snapshot s = ViewCodec.decode(value, i -> chunk(version, i), "etcd " + viewKey);
                        decodedRevision = kv.getModRevision();
                        String refusal = SnapshotSource.refusal(held, s);
                        if (refusal != null) {
                            refusals.incrementAndGet();
                            LOG.severe("SNAPSHOT REFUSED from etcd " + viewKey + ": " + refusal + "; keeping "
                                    + (held == null ? "none" : held.version()));
                        } else {
                            if (held == null || s.version() > held.version()) {
                                lag.get(prompt).record(Math.max(0, clock.millis() - ViewCodec.header(value).publishedMs()),
                                        TimeUnit.MILLISECONDS);
                            }
                            held = s;
                            listener.accept(s);
                        }
                    }
                }
                if (!reachable) {
                    LOG.info("etcd reachable again; snapshot " + (held == null ? "none" : held.version()));
                    reachable = true;
                }
                lastProblem = null;
                backoffMs = 100;
                prompt = pause(confirmEvery.toMillis());
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException | SnapshotException e) {
                if (closed) {
                    return;
                }
                String problem = e.getClass().getSimpleName() + ": " + e.getMessage();
                if (!problem.equals(lastProblem)) {
                    LOG.warning("etcd: cannot read the view of " + gatewayCluster + " (" + problem + "); "
                            + (held == null ? "no snapshot yet, so the gateway cannot serve"
                                    : "serving from snapshot " + held.version()));
                    lastProblem = problem;
                }
                reachable = false;
                prompt = Read.RETRY;
                try {
                    pause(backoffMs);
                } catch (InterruptedException ie) {
                    return;
                }
                backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
            }
        }
    }

    /**
     * Waits until a watch event, a watch's end or {@code ms}, whichever comes first, then drains the other wake-ups;
     * returns what woke it.
     */
    private Read pause(long ms) throws InterruptedException {
        Read woken = wake.poll(ms, TimeUnit.MILLISECONDS);
        wake.clear();
        return woken == null ? Read.PERIODIC : woken;
    }

    /**
     * Watches the view key from the revision after {@code readRevision} (the revision of the read just made), unless a
     * watch is live: every write after that read is an event, however late etcd registers the watch.
     */
    private void watchAfter(long readRevision) {
        long n;
        synchronized (watchLock) {
            if (watcher != null) {
                return;
            }
            n = ++watches;
        }
        beforeWatch.run();
        Watch.Watcher w = client.getWatchClient().watch(viewKey, watchOption(readRevision), Watch.listener(
                r -> wake.offer(Read.WATCH), err -> watchEnded(n, err), () -> watchEnded(n, null)));
        synchronized (watchLock) {
            if (ended != n) {
                watcher = w;
                return;
            }
        }
        Clients.closeQuietly(w); // it ended before it was kept here
    }

    /** The watch that follows a read at {@code readRevision}: from the next revision on. */
    static WatchOption watchOption(long readRevision) {
        return WatchOption.builder().withRevision(readRevision + 1).build();
    }

    /**
     * Watch {@code n} ended ({@code err} null) or failed: it is closed, and the view read again and watched from that
     * read. An earlier watch's late callbacks and the second callback of this one (closing it ends it again) do
     * nothing.
     */
    private void watchEnded(long n, Throwable err) {
        Watch.Watcher w;
        synchronized (watchLock) {
            if (n != watches || ended == n) {
                return;
            }
            ended = n;
            w = watcher; // null when it ended before it was kept
            watcher = null;
        }
        if (!closed) {
            watchesEnded.incrementAndGet();
            if (err instanceof CompactedException c) {
                watchesCompacted.incrementAndGet();
                LOG.info("watch of " + viewKey + " started at a revision etcd compacted (now from "
                        + c.getCompactedRevision() + "); reading the view again");
            } else {
                LOG.fine("watch of " + viewKey + " ended: " + err);
            }
        }
        Clients.closeQuietly(w);
        wake.offer(Read.REWATCH);
    }

    /** Reads the control planes' URLs (the leader first); true when one leads. */
    private boolean readControlPlanes() {
        GetResponse leader = Clients.await(client.getKVClient().get(keys.leader));
        GetResponse members = Clients.await(client.getKVClient().get(Keys.bytes(keys.members),
                GetOption.builder().isPrefix(true).build()));
        List<URI> urls = new ArrayList<>();
        String leads = leader.getKvs().isEmpty() ? null
                : leader.getKvs().get(0).getValue().toString(StandardCharsets.UTF_8);
        if (leads != null) {
            urls.add(URI.create(leads));
        }
        for (KeyValue kv : members.getKvs()) {
            String u = kv.getValue().toString(StandardCharsets.UTF_8);
            if (!u.equals(leads)) {
                urls.add(URI.create(u));
            }
        }
        controlPlanes = List.copyOf(urls);
        return leads != null;
    }

    /** Chunk {@code i} of {@code version} of this gateway cluster's view, or null when it is gone. */
    private byte[] chunk(long version, int i) {
        List<KeyValue> kvs = Clients.await(client.getKVClient().get(keys.chunk(gatewayCluster, version, i))).getKvs();
        return kvs.isEmpty() ? null : kvs.get(0).getValue().getBytes();
    }

    /** What prompted a read of the view: the tag of the watch lag it records. */
    private enum Read {
        FIRST("first"), WATCH("watch"), PERIODIC("periodic"), RETRY("retry"), REWATCH("rewatch");

        final String tag;

        Read(String tag) {
            this.tag = tag;
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (thread != null) {
            thread.interrupt();
        }
        Watch.Watcher w;
        synchronized (watchLock) {
            w = watcher;
            watcher = null;
        }
        Clients.closeQuietly(w);
        client.close();
    }
}
