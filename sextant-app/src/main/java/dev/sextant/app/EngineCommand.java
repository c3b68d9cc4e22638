package dev.sextant.app;

import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Unmatched;

/**
 * {@code sextant engine [--config engine.yaml] [options]}: one emulated engine. The file's keys are the emulator's
 * options without the dashes ({@code max_seqs} for {@code --max-seqs}; {@code models} a list); options on the
 * command line come after the file's, so they win. {@code network_rtt_ms} is a map, gateway cluster id → round trip
 * in ms ({@code {east: 60, eu: 140}}), checked here so that a problem names the file and the line.
 */
@Command(name = "engine", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Run one emulated vLLM engine (docs/engine-emulator.md), from a config file "
        + "and/or the emulator's options (--id, --port, --model, --max-seqs, --decode-base-ms, --error-rate, …).")
final class EngineCommand implements Callable<Integer> {
    static final java.util.Set<String> KEYS = java.util.Set.of("id", "host", "port", "models", "max_seqs",
            "prefill_ms_per_token", "decode_base_ms", "decode_ms_per_seq", "default_max_tokens", "kv_cache_tokens",
            "prefix_cache_entries", "seed", "error_rate", "slowdown", "hang", "crash_after_tokens", "corrupt_stream",
            "tls_cert_file", "tls_key_file", "admin_token_file", "network_rtt_ms", "request_header_timeout",
            "request_body_timeout", "max_header_bytes", "max_connections", "max_buffered_body_bytes");

    @Option(names = "--config", paramLabel = "ENGINE.yaml", description = "The engine's settings.")
    Path config;

    @Unmatched
    List<String> options = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        List<String> args = new ArrayList<>();
        if (config != null) {
            ServerFile f = ServerFile.load(config, KEYS); // validates the keys
            String rtts = f.has("network_rtt_ms") ? roundTrips(f) : null;
            Map<String, Object> m = new com.fasterxml.jackson.databind.ObjectMapper(
                    new com.fasterxml.jackson.dataformat.yaml.YAMLFactory()).readValue(config.toFile(), Map.class);
            for (Iterator<Map.Entry<String, Object>> it = m.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<String, Object> e = it.next();
                if (e.getKey().equals("network_rtt_ms")) {
                    if (rtts != null) {
                        args.add("--network-rtt-ms=" + rtts);
                    }
                } else if (e.getKey().equals("models")) {
                    for (Object model : e.getValue() instanceof List<?> l ? l : List.of(e.getValue())) {
                        args.add("--model");
                        args.add(String.valueOf(model));
                    }
                } else {
                    args.add("--" + e.getKey().replace('_', '-') + "=" + e.getValue());
                }
            }
        }
        args.addAll(options);
        EngineEmulator.main(args.toArray(new String[0]));
        return 0;
    }

    /** {@code network_rtt_ms} as the emulator's option takes it ({@code east=60,eu=140}), checked as the engine would. */
    static String roundTrips(ServerFile f) {
        Map<String, Double> rtts = f.numbers("network_rtt_ms",
                "a map of gateway cluster id to round trip in ms, such as {east: 60, eu: 140}", "a round trip in ms");
        try {
            EngineConfig.defaults("check", "check").withNetworkRttMs(rtts);
        } catch (IllegalArgumentException e) {
            throw new UsageException(f.located(e.getMessage()));
        }
        StringBuilder out = new StringBuilder();
        rtts.forEach((cluster, ms) -> out.append(out.length() == 0 ? "" : ",").append(cluster).append('=').append(ms));
        return out.toString();
    }
}
