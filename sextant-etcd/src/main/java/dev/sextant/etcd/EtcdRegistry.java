package dev.sextant.etcd;

import dev.sextant.etcd.Clients.EtcdUnavailable;
import dev.sextant.server.control.EngineRegistry;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * The engines registered under {@code P/engines/}, as a control plane sees them (docs/etcd.md, "Engine
 * registration"): the prefix is watched, and read whole when the watch fires (one read for a burst of events) and at
 * least every {@link #READ_EVERY_MS}, which also covers a watch lost while etcd was away. While etcd is unreachable
 * the registrations last read stay: a control plane cut off from etcd keeps its engines, and catches up when etcd
 * returns (an engine gone meanwhile is gone then).
 */
final class EtcdRegistry implements EngineRegistry {
    private static final Logger LOG = Logger.getLogger(EtcdRegistry.class.getName());
    /** The longest time between two reads of the prefix, ms. */
    static final long READ_EVERY_MS = 5_000;
    private static final long MAX_BACKOFF_MS = 5_000;

    private final Client client;
    private final String prefix;
    private final BlockingQueue<Boolean> wake = new LinkedBlockingQueue<>();
    private final Thread thread;
    private volatile Entries entries = Entries.NONE;
    private volatile Watch.Watcher watcher;
    private volatile boolean closed;

    EtcdRegistry(Client client, EtcdOptions options) {
        this.client = client;
        this.prefix = new Keys(options.prefix()).engines;
        try {
            read(); // the first snapshot has the engines registered already, when etcd answers
        } catch (EtcdUnavailable e) {
            LOG.warning("etcd: cannot read the registered engines (" + e.getMessage() + "); starting with the topology"
                    + " file's engines only, until etcd answers");
        }
        this.thread = new Thread(this::loop, "sextant-etcd-registry");
        thread.setDaemon(true);
        thread.start();
    }

    @Override
    public Entries entries() {
        return entries;
    }

    private void loop() {
        long backoffMs = 100;
        String lastProblem = null;
        while (!closed) {
            try {
                watch();
                read();
                if (lastProblem != null) {
                    LOG.info("etcd: registered engines read again (" + entries.values().size() + ")");
                }
                lastProblem = null;
                backoffMs = 100;
                wake.poll(READ_EVERY_MS, TimeUnit.MILLISECONDS);
                wake.clear();
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (closed) {
                    return;
                }
                String problem = e.getClass().getSimpleName() + ": " + e.getMessage();
                if (!problem.equals(lastProblem)) {
                    LOG.warning("etcd: cannot read the registered engines (" + problem + "); keeping the "
                            + entries.values().size() + " read last");
                    lastProblem = problem;
                }
                try {
                    wake.poll(backoffMs, TimeUnit.MILLISECONDS);
                } catch (InterruptedException ie) {
                    return;
                }
                backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
            }
        }
    }

    /** Reads the prefix whole; a new generation when anything changed. */
    private void read() {
        Map<String, String> now = new HashMap<>();
        for (KeyValue kv : Clients.await(client.getKVClient().get(Keys.bytes(prefix),
                GetOption.builder().isPrefix(true).build())).getKvs()) {
            now.put(kv.getKey().toString(StandardCharsets.UTF_8).substring(prefix.length()),
                    kv.getValue().toString(StandardCharsets.UTF_8));
        }
        Entries held = entries;
        if (!now.equals(held.values())) {
            entries = Entries.of(held.generation() + 1, now);
        }
    }

    private void watch() {
        if (watcher != null) {
            return;
        }
        watcher = client.getWatchClient().watch(Keys.bytes(prefix), WatchOption.builder().isPrefix(true).build(),
                Watch.listener(r -> wake.offer(Boolean.TRUE), err -> watchBroken(), this::watchBroken));
    }

    private void watchBroken() {
        Watch.Watcher w = watcher;
        watcher = null;
        Clients.closeQuietly(w);
        wake.offer(Boolean.TRUE);
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        Watch.Watcher w = watcher;
        if (w != null) {
            w.close();
        }
        client.close();
    }
}
