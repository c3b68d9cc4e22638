package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The latency outlier rule (docs/request-path.md §4, "Local outlier ejection") through a gateway in front of two
 * emulated engines that decode at 10 ms a token: what counts as a slow first token, and what does not.
 */
class GatewayLatencyOutlierTest {
    private final List<EngineEmulator> engines = new ArrayList<>();
    private Gateway gw;

    @BeforeEach
    void start() {
        for (String id : List.of("e1", "e2")) {
            engines.add(EngineEmulator.start(EngineConfig.defaults(id, "m").withLatency(64, 0.0, 10, 0.0)
                    .withDefaultMaxTokens(3)));
        }
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false),
                SnapshotSource.fixed(Fleet.standIns(engines.get(0).port(), engines.get(1).port())), 1);
    }

    @AfterEach
    void stop() {
        gw.close();
        engines.forEach(EngineEmulator::close);
    }

    /** A key whose requests the gateway sends to {@code engine}. */
    private String keyOn(String engine) throws Exception {
        for (int i = 0; ; i++) {
            HttpResponse<String> r = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat("k" + i, true, 1));
            assertThat(r.statusCode()).isEqualTo(200);
            if (r.headers().firstValue("x-sextant-engine").orElseThrow().equals(engine)) {
                return "k" + i;
            }
        }
    }

    private double ttftsRecorded(String engine) {
        var t = gw.metrics.registry.find("sextant.gateway.ttft").tag("engine", engine).timer();
        return t == null ? 0 : t.count();
    }

    @Test
    void longAnswersNotStreamed_areNoSlowFirstTokens_andEjectNothing() throws Exception {
        String key = keyOn("e1");
        keyOn("e2"); // its peer has answered streams at their pace
        double streamedBefore = ttftsRecorded("e1");
        // twelve whole answers of 100 tokens at once, about 1 s each: 20 × the snapshot's expected TTFT, and their
        // first byte comes with their last token
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            answers.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat(key, false, 100));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }));
        }
        int onE1 = 0;
        for (CompletableFuture<HttpResponse<String>> a : answers) {
            HttpResponse<String> r = a.join();
            assertThat(r.statusCode()).isEqualTo(200);
            onE1 += r.headers().firstValue("x-sextant-engine").orElseThrow().equals("e1") ? 1 : 0;
        }
        assertThat(onE1).as("the key's engine took at least the five the rule needs").isGreaterThanOrEqualTo(5);
        assertThat(gw.plane().ejections()).as("a long generation is not a slow engine").isEmpty();
        assertThat(ttftsRecorded("e1")).as("no time to first token recorded for whole answers")
                .isEqualTo(streamedBefore);
    }
}
