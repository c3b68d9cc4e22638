package dev.sextant.config;

import dev.sextant.config.YamlTree.Mapping;
import dev.sextant.topology.HardwareKind;
import java.util.List;

/**
 * What a file that embeds a topology under one of its keys (a simulator scenario's {@code topology:}) changes in how
 * {@link TopologyLoader#embedded} reads it. The topology's own keys and checks stay those of a topology file
 * (docs/topology.md); the embedding file defines what an engine's hardware is, and so rates the engines.
 */
public interface TopologyEmbedding {

    /** Keys of the topology's mapping that the embedding file does not allow there (it says them elsewhere, or not). */
    List<String> refusedKeys();

    /** Keys an engine may carry besides a topology file's, read by {@link #rating}. */
    List<String> engineKeys();

    /**
     * The output tokens of a model that writes none (the embedding file's workload says what its requests generate);
     * null: required, as in a topology file.
     */
    Integer defaultOutputTokens();

    /** The endpoint of an engine that writes none; a written one is checked as in a topology file. */
    String defaultEndpoint(String engineId);

    /**
     * The rating engine {@code engineId} takes for what it does not write itself (its {@code capacity_rps}, its
     * {@code profile}), read from its entry {@code engine} at {@code path}; null after recording a problem on
     * {@code reader} at the field that has it.
     *
     * @param models the models the engine serves, as its entry names them
     */
    HardwareKind rating(ConfigReader reader, Mapping engine, String path, String engineId, List<String> models);
}
