package dev.sextant.etcd;

import dev.sextant.etcd.Clients.EtcdUnavailable;
import dev.sextant.server.control.Registration;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.PutOption;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * Keeps one engine registered while it answers (docs/etcd.md, "Engine registration"): its {@link Registration} under
 * {@code P/engines/<id>}, attached to a lease of this registrar's that it renews every third of the lease's TTL. The
 * registrar asks the engine's {@code GET <endpoint>/health} every {@code healthInterval}: after
 * {@link #FAILED_CHECKS} failed checks in a row it revokes the lease, so the engine leaves every control plane's
 * topology at once; when the engine answers again it registers anew (a new engine to the control loop, unproven until
 * seen answering). Closed, it revokes the lease; killed, the lease runs out after its TTL and the engine leaves then.
 */
public final class EngineRegistrar implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(EngineRegistrar.class.getName());
    /** Failed health checks in a row after which the engine is taken out of the registry. */
    public static final int FAILED_CHECKS = 3;

    private final Client client;
    private final Keys keys;
    private final EtcdOptions options;
    private final Registration registration;
    private final long healthEveryNanos;
    private final HttpClient http;
    private final URI health;
    private final ScheduledExecutorService thread;

    // on the registrar's thread only
    private long lease;
    private int failedChecks;
    private long lastCheckNanos = Long.MIN_VALUE;
    private boolean engineAnswers = true;
    private String etcdProblem;
    private volatile boolean registered;
    private volatile boolean closed;

    EngineRegistrar(Client client, EtcdOptions options, Registration registration, Duration healthInterval) {
        this.client = client;
        this.options = options;
        this.keys = new Keys(options.prefix());
        this.registration = registration;
        this.healthEveryNanos = healthInterval.toNanos();
        Duration timeout = healthInterval.compareTo(Duration.ofSeconds(1)) < 0 ? healthInterval : Duration.ofSeconds(1);
        this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
        this.health = URI.create(registration.endpoint().replaceAll("/+$", "") + "/health");
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sextant-registrar");
            t.setDaemon(true);
            return t;
        });
        long period = Math.min(options.leaseTtl().toMillis() / 3, healthInterval.toMillis());
        thread.scheduleWithFixedDelay(this::turn, 0, Math.max(1, period), TimeUnit.MILLISECONDS);
    }

    /** True while the engine's key is written under a lease this registrar renews. */
    public boolean registered() {
        return registered;
    }

    /** One turn: the engine's health when due, then the registration kept, taken out or made again. */
    private void turn() {
        if (closed) {
            return;
        }
        try {
            long now = System.nanoTime();
            if (lastCheckNanos == Long.MIN_VALUE || now - lastCheckNanos >= healthEveryNanos) {
                lastCheckNanos = now;
                check();
            }
            if (!engineAnswers) {
                if (lease != 0) {
                    revoke();
                    LOG.warning("engine " + registration.id() + " failed " + FAILED_CHECKS + " health checks in a row ("
                            + health + "): taken out of the registry");
                }
            } else if (lease == 0) {
                register();
            } else if (Clients.await(client.getLeaseClient().keepAliveOnce(lease)).getTTL() <= 0) {
                lease = 0;
                registered = false;
                register();
            }
            if (etcdProblem != null) {
                LOG.info("etcd reachable again: engine " + registration.id() + " registered");
                etcdProblem = null;
            }
        } catch (EtcdUnavailable e) {
            if (closed) {
                return;
            }
            if (e.getMessage() != null && e.getMessage().contains("lease not found")) {
                lease = 0; // expired while etcd or this process was away: registered again at the next turn
                registered = false;
            }
            if (!String.valueOf(e.getMessage()).equals(etcdProblem)) {
                LOG.warning("etcd: cannot keep engine " + registration.id() + " registered (" + e.getMessage()
                        + "); it leaves the registry if this lasts " + options.leaseTtl().toMillis() + " ms");
                etcdProblem = String.valueOf(e.getMessage());
            }
        } catch (RuntimeException e) {
            LOG.warning("registrar turn failed: " + e);
        }
    }

    /** Asks the engine's health endpoint; after {@link #FAILED_CHECKS} failures in a row it no longer answers. */
    private void check() {
        String problem;
        try {
            // the head within 1 s, the whole answer within 2: a body that never ends does not hold the registrar
            HttpResponse<Void> r = dev.sextant.server.internal.WholeAnswer.send(http, HttpRequest.newBuilder(health)
                    .timeout(Duration.ofSeconds(1)).GET().build(), HttpResponse.BodyHandlers.discarding(),
                    Duration.ofSeconds(2));
            problem = r.statusCode() == 200 ? null : "HTTP " + r.statusCode();
        } catch (java.io.IOException e) {
            problem = e.toString();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        if (problem == null) {
            if (!engineAnswers) {
                LOG.info("engine " + registration.id() + " answers its health checks again: registering it");
            }
            failedChecks = 0;
            engineAnswers = true;
        } else if (++failedChecks >= FAILED_CHECKS) {
            engineAnswers = false;
        } else {
            LOG.fine("engine " + registration.id() + " health check failed (" + problem + ")");
        }
    }

    private void register() {
        long id = Clients.await(client.getLeaseClient().grant(options.leaseTtl().toSeconds())).getID();
        Clients.await(client.getKVClient().put(keys.engine(registration.id()), Keys.bytes(registration.json()),
                PutOption.builder().withLeaseId(id).build()));
        lease = id;
        registered = true;
        LOG.info("engine " + registration.id() + " registered under " + options.prefix() + " (" + registration.endpoint()
                + ", cluster " + registration.cluster() + ", hardware " + registration.hardware() + ")");
    }

    private void revoke() {
        long id = lease;
        lease = 0;
        registered = false;
        Clients.await(client.getLeaseClient().revoke(id));
    }

    /** Stops renewing and drops the connection without revoking, as a killed registrar would (tests). */
    void halt() {
        closed = true;
        thread.shutdownNow();
        client.close();
    }

    /** Takes the engine out of the registry at once (its lease revoked), and stops. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        thread.shutdownNow();
        try {
            thread.awaitTermination(5, TimeUnit.SECONDS);
            if (lease != 0) {
                revoke();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.fine("lease not revoked on close: " + e);
        } finally {
            client.close();
        }
    }
}
