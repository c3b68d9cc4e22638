package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.engine.EngineConfig;
import dev.sextant.server.engine.EngineEmulator;
import dev.sextant.server.engine.Faults;
import java.time.Duration;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The latency outlier rule (docs/request-path.md §4, "Local outlier ejection") through a gateway in front of two
 * emulated engines that decode at 10 ms a token: what counts as a slow first token, and what does not.
 */
class GatewayLatencyOutlierTest {
    private final List<EngineEmulator> engines = new ArrayList<>();
    /** One thread per client, each waiting on its answer. */
    private final ExecutorService clients = Executors.newCachedThreadPool();
    private Gateway gw;

    @BeforeEach
    void start() {
        for (String id : List.of("e1", "e2")) {
            engines.add(EngineEmulator.start(EngineConfig.defaults(id, "m").withLatency(64, 0.0, 10, 0.0)
                    .withDefaultMaxTokens(3)));
        }
        // the shipped first_token_timeout (60 s) and total_timeout: only the outlier rule can act within the test
        gw = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false),
                SnapshotSource.fixed(Fleet.standIns(engines.get(0).port(), engines.get(1).port())), 1);
    }

    @AfterEach
    void stop() {
        clients.shutdownNow();
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

    /** A client of its own posting {@code body}: its answer, or null when the request failed (the test over). */
    private CompletableFuture<HttpResponse<String>> client(String body) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return Fleet.post(gw.port(), "/v1/chat/completions", body);
            } catch (Exception e) {
                return null;
            }
        }, clients);
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
            answers.add(client(Fleet.chat(key, false, 100)));
        }
        int onE1 = 0;
        for (CompletableFuture<HttpResponse<String>> a : answers) {
            HttpResponse<String> r = a.join();
            assertThat(r).as("answered").isNotNull();
            assertThat(r.statusCode()).isEqualTo(200);
            onE1 += r.headers().firstValue("x-sextant-engine").orElseThrow().equals("e1") ? 1 : 0;
        }
        assertThat(onE1).as("the key's engine took at least the five the rule needs").isGreaterThanOrEqualTo(5);
        assertThat(gw.plane().ejections()).as("a long generation is not a slow engine").isEmpty();
        assertThat(ttftsRecorded("e1")).as("no time to first token recorded for whole answers")
                .isEqualTo(streamedBefore);
    }

    @Test
    void anEngineThatHangs_isEjectedWhileItsStreamsStillWait_notAtTheirTimeout() throws Exception {
        String key = keyOn("e1");
        keyOn("e2");
        engines.get(0).setFaults(new Faults(0, 1, true, -1)); // takes requests, never answers
        List<CompletableFuture<HttpResponse<String>>> hung = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            hung.add(client(Fleet.chat(key, true, 3)));
        }
        // five streams past 5 × the expected TTFT (about 0.3 s) with no first token from e1: ejected within seconds,
        // where waiting for their first_token_timeout takes a minute
        assertThat(Fleet.await(() -> !gw.plane().ejections().isEmpty(), Duration.ofSeconds(15))).isTrue();
        assertThat(gw.plane().ejections()).singleElement().satisfies(e -> {
            assertThat(e.engineId()).isEqualTo("e1");
            assertThat(e.reason()).contains("no first token after").contains("none from the engine meanwhile");
        });
        assertThat(hung).as("the streams themselves wait on: counting them retries nothing").noneMatch(
                CompletableFuture::isDone);
        HttpResponse<String> next = Fleet.post(gw.port(), "/v1/chat/completions", Fleet.chat(key, true, 3));
        assertThat(next.statusCode()).isEqualTo(200);
        assertThat(next.headers().firstValue("x-sextant-engine")).as("the next request keeps off it").hasValue("e2");
    }
}
