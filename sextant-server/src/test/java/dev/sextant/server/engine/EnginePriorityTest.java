package dev.sextant.server.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.signal.EngineMetrics;
import dev.sextant.signal.PrometheusText;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The emulator's {@code priority} field, as vLLM treats it with and without {@code --scheduling-policy priority}. */
class EnginePriorityTest {
    /** One sequence at a time, 10 ms steps: a request of 100 tokens holds the batch for about a second. */
    private static final EngineConfig ONE_AT_A_TIME = EngineConfig.defaults("engine-p", "m").withLatency(1, 0.01, 10, 0);

    private static String chat(String name, int maxTokens, Integer priority) {
        return "{\"model\":\"m\",\"max_tokens\":" + maxTokens + ",\"messages\":[{\"role\":\"user\",\"content\":\""
                + name + "\"}]" + (priority == null ? "" : ",\"priority\":" + priority) + "}";
    }

    @Test
    void priorityScheduling_admitsTheLowerPriorityValueFirst_whateverCameEarlier() throws Exception {
        try (EngineEmulator engine = EngineEmulator.start(ONE_AT_A_TIME.withPriorityScheduling(true))) {
            Client client = new Client(engine);
            List<String> finished = Collections.synchronizedList(new ArrayList<>());
            List<Thread> threads = new ArrayList<>();
            threads.add(send(client, "holder", 100, null, finished));
            awaitQueue(client, 1, 0);
            threads.add(send(client, "batch", 1, 0, finished));
            awaitQueue(client, 1, 1);
            threads.add(send(client, "premium", 1, -2, finished)); // sent last, admitted first
            awaitQueue(client, 1, 2);
            for (Thread t : threads) {
                t.join();
            }

            assertThat(finished).containsExactly("holder 200", "premium 200", "batch 200");
        }
    }

    @Test
    void firstComeFirstServed_refusesANonZeroPriority_asVllmDoes_andTakesZero() {
        try (EngineEmulator engine = EngineEmulator.start(ONE_AT_A_TIME)) {
            Client client = new Client(engine);

            HttpResponse<String> refused = client.post("/v1/chat/completions", chat("x", 1, -2));
            assertThat(refused.statusCode()).isEqualTo(400);
            assertThat(refused.body()).contains("priority scheduling is not enabled");
            assertThat(client.post("/v1/chat/completions", chat("x", 1, 0)).statusCode()).isEqualTo(200);
            assertThat(client.post("/v1/chat/completions", chat("x", 1, null)).statusCode()).isEqualTo(200);
            assertThat(client.post("/v1/chat/completions", chat("x", 1, null).replace("}]}", "}],\"priority\":\"high\"}"))
                    .body()).contains("'priority' must be an integer");
        }
    }

    @Test
    void schedulingPolicyOption_takesVllmsNames() {
        assertThat(EngineOptions.parseArgs(new String[] {"--scheduling-policy", "priority"}).priorityScheduling())
                .isTrue();
        assertThat(EngineOptions.parseArgs(new String[] {"--scheduling-policy=fcfs"}).priorityScheduling()).isFalse();
        assertThat(EngineOptions.parseArgs(new String[0]).priorityScheduling()).isFalse();
        assertThat(org.assertj.core.api.Assertions.catchThrowable(
                () -> EngineOptions.parseArgs(new String[] {"--scheduling-policy", "lifo"})))
                .hasMessageContaining("--scheduling-policy: 'lifo' (expected: fcfs or priority)");
    }

    private static Thread send(Client client, String name, int maxTokens, Integer priority, List<String> finished) {
        Thread t = new Thread(() -> finished.add(name + " "
                + client.post("/v1/chat/completions", chat(name, maxTokens, priority)).statusCode()));
        t.start();
        return t;
    }

    private static void awaitQueue(Client client, int running, int waiting) {
        Client.await(running + " running and " + waiting + " waiting", () -> {
            EngineMetrics m = EngineMetrics.from(PrometheusText.parse(client.get("/metrics").body()));
            return m.running() == running && m.waiting() == waiting;
        });
    }
}
