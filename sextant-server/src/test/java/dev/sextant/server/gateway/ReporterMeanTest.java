package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** A report's mean is of whole samples: each drained sum goes with its count, whatever the drain races with. */
class ReporterMeanTest {

    @Test
    void drainsRacingTwoAddingThreads_eachReportAWholeNumberOfSamples_andTogetherAllOfThem() throws Exception {
        Reporter.Mean mean = new Reporter.Mean();
        int perThread = 2_000_000;
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> adders = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            Thread a = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < perThread; i++) {
                    mean.add(3_000_000); // every sample 3 ms: a report's mean is 3 ms or the report is torn
                }
            });
            a.start();
            adders.add(a);
        }
        long drained = 0;
        int reports = 0;
        List<String> torn = new ArrayList<>();
        go.countDown();
        while (adders.stream().anyMatch(Thread::isAlive) || reports == 0) {
            ObjectNode o = JsonNodeFactory.instance.objectNode();
            mean.drainInto(o, "ttft");
            long n = o.get("ttft_count").asLong();
            drained += n;
            reports++;
            if (n > 0 && o.get("ttft_ms").asDouble() != 3.0 || n == 0 && o.has("ttft_ms")) {
                torn.add(o.toString());
            }
        }
        for (Thread a : adders) {
            a.join();
        }
        ObjectNode last = JsonNodeFactory.instance.objectNode();
        mean.drainInto(last, "ttft");
        drained += last.get("ttft_count").asLong();

        assertThat(torn).as("reports whose mean is not of their own samples, of %d", reports).isEmpty();
        assertThat(drained).as("samples reported in all").isEqualTo(2L * perThread);
    }
}
