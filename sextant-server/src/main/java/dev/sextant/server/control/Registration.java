package dev.sextant.server.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sextant.config.Urls;
import dev.sextant.topology.PriorityScheduling;
import java.util.ArrayList;
import java.util.List;

/**
 * An engine as it registers itself (docs/etcd.md, "Engine registration"): what the topology would otherwise list for
 * it, less its rating, which comes from its hardware kind. Its JSON form, {@link #json()}, is the value a registrar
 * keeps under the engine's key while the engine answers; {@link #parse} reads it back, checking every field.
 *
 * @param id                 the engine's id, unique in the fleet; non-empty, without {@code /}
 * @param endpoint           base URL of its OpenAI-compatible API, {@code http://} or {@code https://} with a host
 * @param cluster            the engine cluster it sits in (one the topology names)
 * @param hardware           its hardware kind (one the topology's {@code hardware} rates)
 * @param models             the models it serves, at least one, distinct
 * @param priorityScheduling whether and how it orders waiting requests by their {@code priority} field
 * @param metricsPath        the path of its Prometheus metrics under the endpoint ({@code /metrics}), or null when it
 *                           exports none (it is then judged from gateway outcomes and canaries alone)
 */
public record Registration(String id, String endpoint, String cluster, String hardware, List<String> models,
                           PriorityScheduling priorityScheduling, String metricsPath) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Checks every field; messages name the field and the expectation. */
    public Registration {
        if (id == null || id.isBlank() || id.contains("/")) {
            throw new IllegalArgumentException("id: '" + id + "' (expected: a non-empty id without /)");
        }
        if (endpoint == null || !Urls.isHttpBase(endpoint)) {
            throw new IllegalArgumentException("endpoint: '" + endpoint + "' (expected: an http:// or https:// URL with"
                    + " a host, such as http://10.0.0.7:8000)");
        }
        if (cluster == null || cluster.isBlank()) {
            throw new IllegalArgumentException("cluster: missing (expected: an engine cluster of the topology)");
        }
        if (hardware == null || hardware.isBlank()) {
            throw new IllegalArgumentException("hardware: missing (expected: a hardware kind of the topology)");
        }
        if (models == null || models.isEmpty() || models.stream().anyMatch(m -> m == null || m.isBlank())) {
            throw new IllegalArgumentException("models: " + models + " (expected: at least one model id)");
        }
        models = List.copyOf(models);
        if (models.stream().distinct().count() != models.size()) {
            throw new IllegalArgumentException("models: " + models + " (expected: distinct model ids)");
        }
        if (priorityScheduling == null) {
            throw new IllegalArgumentException("priority_scheduling: missing (expected: none, lower_first or"
                    + " higher_first)");
        }
        if (metricsPath != null && !metricsPath.startsWith("/")) {
            throw new IllegalArgumentException("metrics_path: '" + metricsPath + "' (expected: a path starting with /,"
                    + " or null for an engine without metrics)");
        }
    }

    /** The value a registrar writes: the fields but the id, which is the key's last part. */
    public String json() {
        ObjectNode n = JSON.createObjectNode();
        n.put("endpoint", endpoint);
        n.put("cluster", cluster);
        n.put("hardware", hardware);
        ArrayNode m = n.putArray("models");
        models.forEach(m::add);
        n.put("priority_scheduling", priorityScheduling.word());
        if (metricsPath == null) {
            n.putNull("metrics_path");
        } else {
            n.put("metrics_path", metricsPath);
        }
        return n.toString();
    }

    /**
     * Reads the registration of engine {@code id} from its value. Keys it does not know are ignored, so that a newer
     * registrar can add some; {@code priority_scheduling} defaults to {@code none}, {@code metrics_path} to
     * {@code /metrics}.
     *
     * @throws IllegalArgumentException naming the field and what was expected
     */
    public static Registration parse(String id, String json) {
        JsonNode n;
        try {
            n = JSON.readTree(json);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON (" + e.getOriginalMessage() + ")");
        }
        if (n == null || !n.isObject()) {
            throw new IllegalArgumentException("not a JSON object");
        }
        String scheduling = text(n, "priority_scheduling", "none");
        PriorityScheduling s = PriorityScheduling.of(scheduling);
        if (s == null) {
            throw new IllegalArgumentException("priority_scheduling: '" + scheduling + "' (expected: none, lower_first"
                    + " or higher_first)");
        }
        JsonNode models = n.get("models");
        if (models == null || !models.isArray()) {
            throw new IllegalArgumentException("models: " + models + " (expected: a list of model ids)");
        }
        List<String> ids = new ArrayList<>();
        for (JsonNode m : models) {
            if (!m.isTextual()) {
                throw new IllegalArgumentException("models: " + models + " (expected: a list of model ids)");
            }
            ids.add(m.asText());
        }
        return new Registration(id, text(n, "endpoint", null), text(n, "cluster", null), text(n, "hardware", null),
                ids, s, n.has("metrics_path") && n.get("metrics_path").isNull() ? null
                        : text(n, "metrics_path", "/metrics"));
    }

    private static String text(JsonNode n, String field, String dflt) {
        JsonNode v = n.get(field);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isTextual()) {
            throw new IllegalArgumentException(field + ": " + v + " (expected: a string)");
        }
        return v.asText();
    }
}
