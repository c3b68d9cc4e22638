package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class EstimatesTest {

    /**
     * What the loop computes by going over the estimates (the demand file's rows, a sum over the held peaks) must
     * not depend on the order a hash map happens to have in this run: a simulation repeats exactly for its seed only
     * if every map of the estimates iterates in the order of its keys.
     */
    @Test
    void everyMap_iteratesInTheOrderOfItsKeys_atEveryLevel() {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            ids.add("id-" + Integer.toString(i * 7919 % 1000, 36));
        }
        Collections.shuffle(ids, new Random(3));
        Map<String, Map<String, DemandEstimate>> demand = new HashMap<>();
        Map<String, Map<String, LinkEstimate>> links = new HashMap<>();
        Map<String, ModelEstimate> models = new HashMap<>();
        for (String g : ids) {
            Map<String, DemandEstimate> row = new HashMap<>();
            Map<String, LinkEstimate> linkRow = new HashMap<>();
            for (String c : ids) {
                row.put(c, new DemandEstimate(1, 1, 1, 0, ""));
                linkRow.put(c, new LinkEstimate(1, 1, true, ""));
            }
            demand.put(g, row);
            links.put(g, linkRow);
            models.put(g, new ModelEstimate(100, 100, ""));
        }

        Estimates e = new Estimates(0, Map.of(), demand, links, models, 0, "");

        List<String> sorted = new ArrayList<>(ids);
        Collections.sort(sorted);
        assertThat(e.demand().keySet()).containsExactlyElementsOf(sorted);
        assertThat(e.links().keySet()).containsExactlyElementsOf(sorted);
        assertThat(e.models().keySet()).containsExactlyElementsOf(sorted);
        for (String g : ids) {
            assertThat(e.demand().get(g).keySet()).containsExactlyElementsOf(sorted);
            assertThat(e.links().get(g).keySet()).containsExactlyElementsOf(sorted);
        }
    }

    @Test
    void theMaps_cannotBeChanged_norHoldAMissingEstimate() {
        Map<String, ModelEstimate> models = new HashMap<>();
        models.put("m", new ModelEstimate(100, 100, ""));
        Estimates e = new Estimates(0, Map.of(), Map.of(), Map.of(), models, 0, "");
        models.put("n", new ModelEstimate(1, 1, ""));

        assertThat(e.models()).containsOnlyKeys("m");
        assertThatThrownBy(() -> e.models().put("x", null)).isInstanceOf(UnsupportedOperationException.class);
        Map<String, ModelEstimate> missing = new HashMap<>();
        missing.put("m", null);
        assertThatThrownBy(() -> new Estimates(0, Map.of(), Map.of(), Map.of(), missing, 0, ""))
                .isInstanceOf(NullPointerException.class).hasMessageContaining("m");
    }
}
