package dev.sextant.config;

import dev.sextant.topology.HardwareKind;
import dev.sextant.topology.Topology;
import java.util.Map;

/**
 * A topology file as loaded: the topology, and the hardware kinds it rates (an engine that registers names one and
 * takes its capacity and profile; docs/topology.md, "hardware").
 *
 * @param topology the topology, with the engines the file lists (possibly none)
 * @param hardware the hardware kinds by id, in file order; empty when the file has none
 */
public record TopologyFile(Topology topology, Map<String, HardwareKind> hardware) {
    public TopologyFile {
        if (topology == null) {
            throw new IllegalArgumentException("topology: missing");
        }
        hardware = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(hardware));
    }
}
