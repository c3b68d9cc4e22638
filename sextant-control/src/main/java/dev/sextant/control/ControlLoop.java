package dev.sextant.control;

import dev.sextant.request.Ticker;
import dev.sextant.snapshot.Snapshot;
import dev.sextant.topology.Topology;
import java.util.List;

/**
 * The signal → estimate → policy step of Sextant (docs/design.md §3, docs/control-loop.md): takes observation
 * records (engine scrapes, gateway reports, canary results), keeps an estimate of the fleet (each engine's latency
 * profile, capacity and condition, the demand per gateway cluster and class, round trips, output lengths, the
 * value of a warm KV cache), solves the optimizer on the estimates, and decides when a new snapshot is worth
 * publishing. Pure: no sockets, no clocks, no threads; time comes only from the {@link Ticker}. The control plane
 * feeds it from HTTP and scrapes; the simulator feeds the same class with the same records.
 *
 * <p>Thread-safe: every method takes one lock, and none does I/O, so a shell may report from its I/O threads and
 * step from its policy thread.
 *
 * <p>Usage by a shell:
 * <pre>{@code
 * ControlLoop loop = ControlLoop.create(topology, ControlOptions.defaults(), Ticker.system(), restored);
 * loop.observe(EngineScrape.of("east-1", ticker.nanos(), EngineMetrics.from(PrometheusText.parse(body))));
 * loop.observe(report);                                   // a gateway's POST /v1/reports
 * for (Canary c : loop.canariesDue()) send(c);            // and loop.observe(CanaryResult…) when it ends
 * Step s = loop.step();                                   // every solve interval, or at once when urgent()
 * if (s.published()) publisher.publish(s.snapshot());
 * }</pre>
 */
public interface ControlLoop {

    /**
     * A control loop for {@code topology}.
     *
     * @param topology the fleet as configured: the priors of every estimate
     * @param options  how evidence is weighed
     * @param ticker   the only source of time
     * @param restored a snapshot published before a restart (its version and slot tables are gone on from), or null
     */
    static ControlLoop create(Topology topology, ControlOptions options, Ticker ticker, Snapshot restored) {
        return new DefaultControlLoop(topology, options, ticker, restored);
    }

    /** The topology file changed: new priors, engines that joined start unproven, engines that left are forgotten. */
    void topology(Topology topology);

    /** The topology in force. */
    Topology topology();

    /** A scrape of an engine, or its failure. An engine the topology does not have is ignored. */
    void observe(EngineScrape scrape);

    /** A gateway's report. Classes and engines the topology does not have are ignored. */
    void observe(GatewayReport report);

    /** How a canary went. */
    void observe(CanaryResult result);

    /** The canaries to send now (each engine at most once per canary interval); they count as sent. */
    List<Canary> canariesDue();

    /** True when something changed that a solve should follow at once (an engine's condition, a cut link, a demand shift). */
    boolean urgent();

    /** Estimates, solves and decides; see {@link Step}. A published snapshot becomes the held one. */
    Step step();

    /** The last step, or null before the first. */
    Step lastStep();

    /** The snapshot published last (or adopted), or null before the first. */
    Snapshot published();

    /** The topology the published snapshot was solved for (estimates applied), or null before the first. */
    Topology publishedFor();

    /**
     * {@code snapshot} is now the published one without a solve: the shell republished the held content under a
     * higher version (a gateway held a version from before a restart). Its version must be above the held one's.
     */
    void adopt(Snapshot snapshot);

    /** The estimates now. */
    Estimates estimates();
}
