package dev.sextant.etcd;

import dev.sextant.etcd.Clients.EtcdUnavailable;
import dev.sextant.request.Ticker;
import dev.sextant.server.control.Leadership;
import dev.sextant.snapshot.Snapshot;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * Leadership through an etcd lease and one leader key (docs/etcd.md, "Election and fencing"). Every {@code ttl/3}
 * the replica renews its lease (a new one once it expired) and, when it does not lead, tries to create
 * {@code P/leader} under its lease in a transaction that succeeds only if the key does not exist. The create revision
 * of the key it made names its term: every write of a publication is a transaction conditional on the leader key
 * still having that create revision, so a replica whose lease expired (paused, partitioned, killed) can write
 * nothing once another one leads. Versions are reserved in {@code P/version} by a transaction that requires the new
 * one to be above the reserved one, so they stay monotone across leaders whatever each replica believes.
 *
 * <p>A publication's views are made and encoded on a pool, a few ahead of the writes, and each is written as soon as
 * it is ready, in its own fenced transaction: the gateway clusters whose views are ready first get them first, and no
 * more views are held than the pool has threads, plus two (one being written, one ready to write next). The first
 * write refused ends the publication: the views written before it stay (each a whole view of a version this term
 * reserved), none is written after it.
 *
 * <p>It believes it leads only while its last renewal was sent less than the TTL ago: etcd counts the TTL from
 * when it received the renewal, later, so this replica stops believing before etcd lets the key go. The fencing
 * does not depend on that belief; the belief only spares etcd the writes it would refuse.
 */
final class EtcdLeadership implements Leadership {
    private static final Logger LOG = Logger.getLogger(EtcdLeadership.class.getName());

    private final Client client;
    private final Keys keys;
    private final EtcdOptions options;
    private final Ticker ticker;
    private final Clock clock;
    private final long ttlNanos;
    private final int maxValueBytes;
    private final ScheduledExecutorService campaign;
    private final Executor encoders;
    private final int encodedAhead;
    private final CompositeMeterRegistry meters = new CompositeMeterRegistry();
    private final Counter deposed;
    private final DistributionSummary publicationBytes;
    private final Timer publicationTime;
    private final Timer firstViewTime;
    private final Counter terms;

    // guarded by this
    private URI self;
    private long lease;
    private long term; // create revision of the leader key this replica made; 0: it does not lead
    private long renewedNanos;
    private boolean reachable = true;
    private volatile boolean closed;

    EtcdLeadership(Client client, EtcdOptions options, Ticker ticker, Clock clock, int maxValueBytes) {
        this(client, options, ticker, clock, maxValueBytes, encoders(Runtime.getRuntime().availableProcessors()));
    }

    /**
     * As the other constructor, with the views made and encoded on {@code encoders} (shut down with this leadership
     * when it is an {@link ExecutorService}).
     */
    EtcdLeadership(Client client, EtcdOptions options, Ticker ticker, Clock clock, int maxValueBytes,
                   Executor encoders) {
        this.client = client;
        this.encoders = encoders;
        // one ready to write while the pool makes the next ones
        this.encodedAhead = Runtime.getRuntime().availableProcessors() + 1;
        this.options = options;
        this.keys = new Keys(options.prefix());
        this.ticker = ticker;
        this.clock = clock;
        this.ttlNanos = options.leaseTtl().toNanos();
        this.maxValueBytes = maxValueBytes;
        this.campaign = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sextant-etcd-campaign");
            t.setDaemon(true);
            return t;
        });
        Gauge.builder("sextant.etcd.leader", this, l -> l.leading() ? 1 : 0)
                .description("1 while this control plane leads (holds the leader key under a live lease)").register(meters);
        this.terms = Counter.builder("sextant.etcd.terms")
                .description("times this control plane won leadership").register(meters);
        this.deposed = Counter.builder("sextant.etcd.deposed")
                .description("publications refused because another replica leads or the lease expired").register(meters);
        this.publicationBytes = DistributionSummary.builder("sextant.etcd.publication.bytes").baseUnit("bytes")
                .description("bytes written to etcd by one whole publication: every gateway cluster's view, gzipped")
                .register(meters);
        this.publicationTime = Timer.builder("sextant.etcd.publication.time")
                .description("one whole publication to etcd, from its start to its last view written").register(meters);
        this.firstViewTime = Timer.builder("sextant.etcd.publication.first.view")
                .description("from a publication's start to its first view written: how soon the first gateways can"
                        + " see it").register(meters);
    }

    /** {@code threads} daemon threads that make and encode views, gone after a minute idle (a standby's). */
    private static ExecutorService encoders(int threads) {
        ThreadPoolExecutor pool = new ThreadPoolExecutor(threads, threads, 1, TimeUnit.MINUTES,
                new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "sextant-etcd-encode");
                    t.setDaemon(true);
                    return t;
                });
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        meters.add(registry);
    }

    @Override
    public synchronized void join(URI url) {
        joinUnscheduled(url);
        long period = Math.max(1, options.leaseTtl().toMillis() / 3);
        campaign.scheduleWithFixedDelay(this::renew, 0, period, TimeUnit.MILLISECONDS);
    }

    /** Joins without renewing on a schedule: the caller calls {@link #renew} (tests that drive time by hand). */
    synchronized void joinUnscheduled(URI url) {
        if (self != null) {
            throw new IllegalStateException("already joined");
        }
        self = options.advertise() != null ? options.advertise() : url;
    }

    /** Stops renewing and drops the connection without giving anything up, as a killed process would (tests). */
    void halt() {
        closed = true;
        campaign.shutdownNow();
        shutDownEncoders();
        client.close();
    }

    @Override
    public synchronized boolean leading() {
        return term != 0 && ticker.nanos() - renewedNanos < ttlNanos;
    }

    /** The term this replica leads in (the leader key's create revision), or 0. */
    synchronized long term() {
        return leading() ? term : 0;
    }

    /** Renews the lease (or takes a new one) and campaigns when not leading; on the campaign thread. */
    void renew() {
        if (closed) {
            return;
        }
        try {
            long sent = ticker.nanos();
            long id;
            synchronized (this) {
                id = lease;
            }
            if (id == 0) {
                id = Clients.await(client.getLeaseClient().grant(options.leaseTtl().toSeconds())).getID();
                Clients.await(client.getKVClient().put(keys.member(self.toString()), bytes(self.toString()),
                        PutOption.builder().withLeaseId(id).build()));
                synchronized (this) {
                    lease = id;
                    renewedNanos = sent;
                }
            } else {
                long ttl = Clients.await(client.getLeaseClient().keepAliveOnce(id)).getTTL();
                if (ttl <= 0) {
                    lost("its lease expired (not renewed within " + options.leaseTtl().toMillis() + " ms)");
                    return;
                }
                synchronized (this) {
                    renewedNanos = sent;
                }
            }
            campaign(id);
            reachableAgain();
        } catch (EtcdUnavailable e) {
            if (e.getMessage() != null && e.getMessage().contains("lease not found")) {
                lost("its lease expired (etcd no longer knows it)");
                return;
            }
            synchronized (this) {
                if (reachable) {
                    LOG.warning((e.refused ? e.getMessage() : "etcd unreachable (" + e.getMessage() + ")") + (term != 0 ? "; leads until its lease"
                            + " runs out, then publishes nothing" : ""));
                    reachable = false;
                }
            }
        } catch (RuntimeException e) {
            LOG.warning("campaign step failed: " + e);
        }
    }

    private synchronized void reachableAgain() {
        if (!reachable) {
            LOG.info("etcd reachable again");
            reachable = true;
        }
    }

    /** Creates the leader key under {@code id} if no one holds it. */
    private void campaign(long id) {
        synchronized (this) {
            if (term != 0) {
                return;
            }
        }
        TxnResponse r = Clients.await(client.getKVClient().txn()
                .If(new Cmp(keys.leader, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                .Then(Op.put(keys.leader, bytes(self.toString()), PutOption.builder().withLeaseId(id).build()),
                        Op.txn(new Cmp[] {new Cmp(keys.version, Cmp.Op.EQUAL, CmpTarget.createRevision(0))},
                                new Op[] {Op.put(keys.version, bytes(Keys.padded(0)), PutOption.DEFAULT)},
                                new Op[0]))
                .Else(Op.get(keys.leader, GetOption.DEFAULT))
                .commit());
        long won;
        if (r.isSucceeded()) {
            won = r.getHeader().getRevision();
        } else {
            List<KeyValue> kvs = r.getGetResponses().get(0).getKvs();
            // our own key, from an earlier attempt whose answer was lost
            won = !kvs.isEmpty() && kvs.get(0).getLease() == id ? kvs.get(0).getCreateRevision() : 0;
        }
        if (won != 0) {
            synchronized (this) {
                term = won;
            }
            terms.increment();
            LOG.warning("leads the control planes under " + options.prefix() + " (term " + won + ", " + self + ")");
        }
    }

    private synchronized void lost(String why) {
        if (term != 0) {
            LOG.warning("no longer leads: " + why);
        }
        term = 0;
        lease = 0;
    }

    @Override
    public long highestVersion() {
        List<KeyValue> kvs = Clients.await(client.getKVClient().get(keys.version)).getKvs();
        return kvs.isEmpty() ? 0 : Long.parseLong(kvs.get(0).getValue().toString(StandardCharsets.US_ASCII));
    }

    @Override
    public void publish(Snapshot snapshot) {
        long t = term();
        if (t == 0) {
            deposed.increment();
            throw new Deposed("this replica does not lead (another does, or its lease was not renewed in time)");
        }
        long start = ticker.nanos();
        Cmp leads = new Cmp(keys.leader, Cmp.Op.EQUAL, CmpTarget.createRevision(t));
        long v = snapshot.version();
        // the version first: once reserved, no leader can publish it or one below it again
        TxnResponse r = Clients.await(client.getKVClient().txn()
                .If(leads, new Cmp(keys.version, Cmp.Op.LESS, CmpTarget.value(bytes(Keys.padded(v)))))
                .Then(Op.put(keys.version, bytes(Keys.padded(v)), PutOption.DEFAULT))
                .Else(Op.get(keys.leader, GetOption.DEFAULT), Op.get(keys.version, GetOption.DEFAULT))
                .commit());
        if (!r.isSucceeded()) {
            List<KeyValue> leader = r.getGetResponses().get(0).getKvs();
            if (leader.isEmpty() || leader.get(0).getCreateRevision() != t) {
                refused(t, leader);
            }
            List<KeyValue> reserved = r.getGetResponses().get(1).getKvs();
            throw new IllegalStateException("version: " + v + " (expected: above the reserved "
                    + (reserved.isEmpty() ? "none" : reserved.get(0).getValue().toString(StandardCharsets.US_ASCII))
                    + ")");
        }
        long now = clock.millis();
        CompletionService<View> ready = new ExecutorCompletionService<>(encoders);
        // the views being made, or made and not yet taken to be written: at most encodedAhead
        Set<Future<View>> making = new HashSet<>();
        Iterator<String> toMake = snapshot.routes().keySet().stream().sorted().iterator();
        long bytes = 0;
        try {
            while (making.size() < encodedAhead && toMake.hasNext()) {
                making.add(make(ready, snapshot, toMake.next(), now));
            }
            while (!making.isEmpty()) {
                Future<View> done = take(ready);
                making.remove(done);
                if (toMake.hasNext()) {
                    making.add(make(ready, snapshot, toMake.next(), now));
                }
                View view = made(done);
                write(t, leads, v, view);
                if (bytes == 0) {
                    firstViewTime.record(ticker.nanos() - start, TimeUnit.NANOSECONDS);
                }
                bytes += view.encoded().bytes();
            }
        } finally {
            making.forEach(f -> f.cancel(false)); // after a refusal or a failure: the views not made yet never are
        }
        publicationBytes.record(bytes);
        publicationTime.record(ticker.nanos() - start, TimeUnit.NANOSECONDS);
    }

    /** A gateway cluster's view of a publication, encoded. */
    private record View(String gatewayCluster, ViewCodec.Encoded encoded) {
    }

    /** Makes and encodes {@code g}'s view of {@code snapshot}, published at {@code now}, on the pool. */
    private Future<View> make(CompletionService<View> ready, Snapshot snapshot, String g, long now) {
        return ready.submit(() -> new View(g, ViewCodec.encode(snapshot.forGateway(g), now, maxValueBytes)));
    }

    /** The next view made, whichever it is. */
    private static Future<View> take(CompletionService<View> ready) {
        try {
            return ready.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("publication interrupted", e);
        }
    }

    /** The view {@code f} made; what making it threw, as it was. */
    private static View made(Future<View> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // cannot happen: it is done
            throw new IllegalStateException("publication interrupted", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException("view not made: " + e.getCause(), e.getCause());
        }
    }

    /** Writes {@code view} of version {@code v}, fenced on term {@code t}: its chunks, then its key. */
    private void write(long t, Cmp leads, long v, View view) {
        String g = view.gatewayCluster();
        ViewCodec.Encoded e = view.encoded();
        for (int c = 0; c < e.chunks().size(); c++) {
            fenced(t, leads, Op.put(keys.chunk(g, v, c), ByteSequence.from(e.chunks().get(c)), PutOption.DEFAULT));
        }
        // the view, and the chunks of older versions gone with it (a reader of one re-reads the view)
        ByteSequence from = bytes(keys.chunks(g));
        ByteSequence below = bytes(keys.chunks(g) + Keys.padded(v));
        fenced(t, leads, Op.put(keys.view(g), ByteSequence.from(e.value()), PutOption.DEFAULT),
                Op.delete(from, DeleteOption.builder().withRange(below).build()));
    }

    /** Runs {@code ops} if this replica still leads in term {@code t}; else it is deposed. */
    private void fenced(long t, Cmp leads, Op... ops) {
        TxnResponse r = Clients.await(client.getKVClient().txn().If(leads).Then(ops)
                .Else(Op.get(keys.leader, GetOption.DEFAULT)).commit());
        if (!r.isSucceeded()) {
            refused(t, r.getGetResponses().get(0).getKvs());
        }
    }

    private void refused(long t, List<KeyValue> leader) {
        deposed.increment();
        String now = leader.isEmpty() ? "no one leads now"
                : "now led by " + leader.get(0).getValue().toString(StandardCharsets.UTF_8) + " (term "
                        + leader.get(0).getCreateRevision() + ")";
        synchronized (this) {
            if (term == t) {
                term = 0;
            }
        }
        throw new Deposed("term " + t + " is over: " + now);
    }

    @Override
    public void close() {
        if (closed) {
            return; // halted or closed already
        }
        closed = true;
        campaign.shutdownNow();
        shutDownEncoders();
        long id;
        synchronized (this) {
            id = lease;
            term = 0;
            lease = 0;
        }
        try {
            if (id != 0) {
                // the leader key and the member key go with the lease: a standby takes over at once
                Clients.await(client.getLeaseClient().revoke(id));
            }
        } catch (RuntimeException e) {
            LOG.fine("lease not revoked on close: " + e);
        } finally {
            client.close();
        }
    }

    private void shutDownEncoders() {
        if (encoders instanceof ExecutorService pool) {
            pool.shutdownNow();
        }
    }

    private static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }
}
