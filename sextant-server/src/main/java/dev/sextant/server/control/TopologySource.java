package dev.sextant.server.control;

import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigProblem;
import dev.sextant.config.TopologyException;
import dev.sextant.config.TopologyFile;
import dev.sextant.config.TopologyLoader;
import dev.sextant.server.internal.LogText;
import dev.sextant.server.internal.WatchedFile;
import dev.sextant.topology.Topology;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.logging.Logger;

/**
 * Where the control loop's topology comes from: the topology file, watched for changes (a change that is invalid
 * or unreadable keeps the last valid version in force, and says why in {@link #error()}), and the engines
 * registered in an {@link EngineRegistry} that fit it (docs/etcd.md, "Engine registration"). Checked on the policy
 * thread; what {@code /healthz} and the gauges read is volatile.
 */
final class TopologySource implements AutoCloseable {
    /** The control plane's logger: one name for operators to set, whichever part of it speaks. */
    private static final Logger LOG = Logger.getLogger(ControlPlane.class.getName());

    private final EngineRegistry engineRegistry;
    private final Counter reloadFailures;
    private final Map<RegisteredEngines.Reason, Counter> refusedRegistrations =
            new EnumMap<>(RegisteredEngines.Reason.class);
    /** The registered engines in the topology in force, by id: their metrics path, or null without metrics. */
    private volatile Map<String, String> registered = Map.of();
    /** The registrations refused now, for /healthz. */
    private volatile List<RegisteredEngines.Refusal> refusals = List.of();
    /** The topology file in force (its last valid version), before registered engines join it; refreshed on the policy thread. */
    private final WatchedFile<TopologyFile> file;

    // touched only on the policy thread (and at start)
    /** The registry's generation merged last. */
    private long registryGeneration = -1;
    /** The refusals logged already, as id and value: each is logged and counted once, not at every check. */
    private Set<String> refusalsSaid = Set.of();

    /**
     * Reads the topology file.
     *
     * @throws TopologyException when it is invalid (file, line and field in the problems)
     */
    TopologySource(Path topologyFile, EngineRegistry engineRegistry, MeterRegistry registry)
            throws TopologyException {
        this.engineRegistry = engineRegistry;
        try {
            this.file = WatchedFile.read(topologyFile, TopologyLoader::loadFile);
        } catch (IOException e) {
            throw new TopologyException(List.of(new ConfigProblem(topologyFile.toString(), 0, "",
                    ConfigProblem.cannotRead(e))));
        } catch (ConfigException e) {
            throw (TopologyException) e; // what the loader throws
        }
        this.reloadFailures = Counter.builder("sextant.control.topology.reload.failures")
                .description("topology file changes refused as invalid (the previous one stays in force)").register(registry);
        for (RegisteredEngines.Reason r : RegisteredEngines.Reason.values()) {
            refusedRegistrations.put(r, Counter.builder("sextant.control.registrations.refused").tag("reason", r.label())
                    .description("engine registrations refused, by why: invalid (not a registration), duplicate (the "
                            + "topology file lists the id, and wins), unknown_cluster, unknown_hardware, unknown_model, "
                            + "no_round_trip (a gateway cluster with demand it would serve has no round trip to it)")
                    .register(registry));
        }
        Gauge.builder("sextant.control.registered.engines", () -> registered.size())
                .description("registered engines in the topology in force (beside the topology file's own)")
                .register(registry);
        Gauge.builder("sextant.control.topology.invalid", () -> file.error() == null ? 0 : 1)
                .description("1 while the topology file on disk is invalid and the last valid one is in force").register(registry);
    }

    /** The topology file's engines and the registered ones that fit it, now. */
    Topology current() {
        return merge(engineRegistry.entries());
    }

    /**
     * Takes a changed topology file or a change of the registered engines, as one new topology for the loop.
     *
     * @return the new topology, or null when nothing the loop needs changed (equal to {@code inForce})
     */
    Topology reloadIfChanged(Topology inForce) {
        boolean fileChanged = reloadFileIfChanged();
        EngineRegistry.Entries entries = engineRegistry.entries();
        if (!fileChanged && entries.generation() == registryGeneration) {
            return null;
        }
        Topology t = merge(entries);
        if (t.equals(inForce)) {
            return null; // a registration refused, or one refused again: nothing the loop needs
        }
        if (!fileChanged) {
            LOG.info("registered engines changed: " + registered.size() + " in the topology now");
        }
        return t;
    }

    /** The registered engines in the topology last made, by id: their metrics path, or null without metrics. */
    Map<String, String> registered() {
        return registered;
    }

    /** The registrations refused now (the registry's entries that do not fit the topology file). */
    List<RegisteredEngines.Refusal> refusals() {
        return refusals;
    }

    /** The last reload error, or null when the file in force is the file on disk. */
    String error() {
        return file.error();
    }

    /**
     * The topology file's engines and the registered ones that fit it; logs each refused registration once (a
     * {@code WARNING} naming the engine and why) and counts it in {@code sextant_control_registrations_refused_total}.
     */
    private Topology merge(EngineRegistry.Entries entries) {
        registryGeneration = entries.generation();
        RegisteredEngines.Merged m = RegisteredEngines.merge(file.current(), entries);
        Set<String> said = new HashSet<>();
        for (RegisteredEngines.Refusal r : m.refused()) {
            String key = r.id() + "\n" + entries.values().get(r.id());
            said.add(key);
            if (!refusalsSaid.contains(key)) {
                refusedRegistrations.get(r.reason()).increment();
                // an id and a reason read from etcd, where anything with write access may have put them
                LOG.warning(LogText.oneLine("REGISTRATION REFUSED: engine " + r.id() + " (" + r.reason().label() + "): "
                        + r.why()));
            }
        }
        refusalsSaid = said;
        refusals = m.refused();
        registered = m.metricsPath();
        return m.topology();
    }

    /**
     * Takes a changed topology file if it is valid; true when it did. A file that cannot be read is a warning, once
     * until it can be; an invalid one is a failed reload, logged and counted.
     */
    private boolean reloadFileIfChanged() {
        boolean wasValid = file.error() == null || file.unreadable();
        switch (file.refresh()) {
            case RELOADED -> {
                if (!wasValid) {
                    LOG.info("topology " + file.file() + " is valid again");
                }
                LOG.info("topology " + file.file() + " reloaded");
                return true;
            }
            case REFUSED -> {
                if (file.unreadable()) {
                    LOG.warning("topology " + file.error() + "; keeping the topology in force");
                } else {
                    reloadFailures.increment();
                    LOG.severe("TOPOLOGY RELOAD FAILED, keeping the previous version in force: " + file.error());
                }
                return false;
            }
            case RESTORED -> {
                LOG.info("topology " + file.file() + " is readable again, unchanged");
                return false;
            }
            default -> {
                return false;
            }
        }
    }

    /** Closes the engine registry. */
    @Override
    public void close() {
        engineRegistry.close();
    }
}
