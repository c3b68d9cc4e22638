package dev.sextant.topology;

/**
 * One thing wrong with a topology.
 *
 * @param path    where, in the YAML's own key names: {@code engines[2].capacity_rps},
 *                {@code network_rtt_ms.east.gpu-west}, {@code demand_rps.east.chat}
 * @param message what is wrong and what was expected
 */
public record Problem(String path, String message) {
    @Override
    public String toString() {
        return path + ": " + message;
    }
}
