package dev.sextant.server.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the control plane said at one summary of the {@link LoadDriver}: its {@code /healthz} and one explanation per
 * stream, fetched with a timeout each, and read into the summary's lines (demand, planned shares, round trips,
 * engine estimates, the last step).
 */
record ControlView(JsonNode health, Map<String, JsonNode> explained, String error) {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration TIMEOUT = Duration.ofSeconds(3);
    private static final Pattern STAYS = Pattern.compile("(.*): snapshot (\\d+) stays\\.?");

    static ControlView fetch(HttpClient http, LoadDriver.Watch w, List<LoadDriver.Stream> streams) {
        CompletableFuture<JsonNode> health = get(http, w.uri().resolve("/healthz"), null);
        Map<String, CompletableFuture<JsonNode>> asked = new LinkedHashMap<>();
        for (LoadDriver.Stream s : streams) {
            asked.computeIfAbsent(s.gateway() + "\u0000" + s.trafficClass(), k -> get(http, w.uri().resolve(
                    "/v1/explain?gateway=" + enc(s.gateway()) + "&class=" + enc(s.trafficClass())), w.token()));
        }
        String error = null;
        JsonNode hz = null;
        try {
            hz = health.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            error = failure(e);
        }
        Map<String, JsonNode> ex = new LinkedHashMap<>();
        for (Map.Entry<String, CompletableFuture<JsonNode>> e : asked.entrySet()) {
            try {
                ex.put(e.getKey(), e.getValue().get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
            } catch (Exception x) {
                error = error == null ? failure(x) : error;
            }
        }
        return new ControlView(hz, ex, error);
    }

    private static String failure(Exception e) {
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
        Throwable c = e.getCause() == null ? e : e.getCause();
        return c.getClass().getSimpleName() + (c.getMessage() == null ? "" : ": " + c.getMessage());
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static CompletableFuture<JsonNode> get(HttpClient http, URI uri, String token) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(TIMEOUT).header("accept", "application/json");
        if (token != null) {
            b.header("authorization", "Bearer " + token);
        }
        return http.sendAsync(b.GET().build(), HttpResponse.BodyHandlers.ofString()).thenApply(r -> {
            if (r.statusCode() != 200) {
                throw new IllegalStateException(uri.getPath() + ": HTTP " + r.statusCode());
            }
            try {
                return JSON.readTree(r.body());
            } catch (Exception e) {
                throw new IllegalStateException(uri.getPath() + ": unparsable answer", e);
            }
        });
    }

    /** The explanations of {@code gateway}'s classes, in the order of the streams. */
    private List<JsonNode> of(String gateway) {
        List<JsonNode> out = new ArrayList<>();
        explained.forEach((k, v) -> {
            if (k.startsWith(gateway + "\u0000")) {
                out.add(v);
            }
        });
        return out;
    }

    /**
     * "chat 100.2 req/s observed (configured 100)", or "chat 100 req/s configured, until the reports settle (they
     * show 28.6)", per class of the gateway cluster's demand.
     */
    String demand(String gateway) {
        List<JsonNode> ex = of(gateway);
        if (ex.isEmpty()) {
            return error == null ? "" : "control plane: " + error;
        }
        List<String> parts = new ArrayList<>();
        ex.get(0).path("estimates").path("demand").fields().forEachRemaining(e -> {
            JsonNode d = e.getValue();
            String why = d.path("why").asText("");
            double r = d.path("rps").asDouble(Double.NaN);
            if (why.startsWith("observed")) {
                parts.add(String.format(Locale.ROOT, "%s %s req/s observed (configured %s)", e.getKey(), rps(r),
                        rps(d.path("configured_rps").asDouble(Double.NaN))));
            } else if (why.startsWith("configured, until the reports settle")) {
                parts.add(String.format(Locale.ROOT, "%s %s req/s configured, until the reports settle (they show %s)",
                        e.getKey(), rps(r), rps(d.path("reported_rps").asDouble(Double.NaN))));
            } else {
                parts.add(String.format(Locale.ROOT, "%s %s req/s %s", e.getKey(), rps(r), why));
            }
        });
        return String.join("; ", parts);
    }

    /** The share of the gateway cluster's planned demand the published snapshot sends to {@code cluster}. */
    double plannedShare(String gateway, String cluster, Map<String, String> engineClusters) {
        double demand = 0;
        double there = 0;
        for (JsonNode ex : of(gateway)) {
            double d = ex.path("demand_rps").asDouble(0);
            demand += d;
            for (JsonNode e : ex.path("engines")) {
                String id = e.path("engine").asText();
                if (cluster.equals(engineClusters.getOrDefault(id, id))) {
                    there += d * e.path("weight").asDouble(0);
                }
            }
        }
        return demand > 0 ? there / demand : Double.NaN;
    }

    /** The round trip the control plane believes in from {@code gateway} to {@code cluster}, ms. */
    double roundTrip(String gateway, String cluster) {
        List<JsonNode> ex = of(gateway);
        return ex.isEmpty() ? Double.NaN
                : ex.get(0).path("estimates").path("round_trips").path(cluster).path("ms").asDouble(Double.NaN);
    }

    /**
     * One line per set of engines whose estimates read the same: "use-1 use-2  healthy  82.4 req/s (configured 40):
     * estimated from 2813 requests over 39 s", with why an engine is not healthy, and how much slower it is. Engines
     * are grouped by what the line says, not by the exact figures behind it: two engines at 38.93 and 38.94 req/s
     * would otherwise stand on two lines that read alike.
     */
    List<String> engineLines() {
        if (health == null) {
            return List.of();
        }
        Map<String, List<String>> groups = new LinkedHashMap<>();
        health.path("engines").fields().forEachRemaining(e -> groups.computeIfAbsent(estimate(e.getValue()),
                k -> new ArrayList<>()).add(e.getKey()));
        int pad = groups.values().stream().mapToInt(l -> String.join(" ", l).length()).max().orElse(0);
        List<String> out = new ArrayList<>();
        groups.forEach((estimate, ids) -> out.add(String.format(Locale.ROOT, "  %-" + pad + "s  %s",
                String.join(" ", ids), estimate)));
        return out;
    }

    /** What an engine line says of one engine's estimate, after its id: "healthy  82.4 req/s (configured 40): …". */
    private static String estimate(JsonNode x) {
        String condition = x.path("condition").asText();
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%-8s %s req/s (configured %s)", condition,
                rps(x.path("capacity_rps").asDouble(Double.NaN)), rps(x.path("configured_rps").asDouble(Double.NaN))));
        double slowdown = x.path("slowdown").asDouble(1);
        if (Math.abs(slowdown - 1) > 1e-9) {
            b.append(String.format(Locale.ROOT, ", %.1f× slower", slowdown));
        }
        b.append(": ").append(evidence(x.path("capacity_why").asText("")));
        if (!"healthy".equals(condition)) {
            b.append("; ").append(x.path("why").asText(""));
        }
        return b.toString();
    }

    /**
     * The evidence part of a capacity's why: "estimated from 2813 requests over 39 s" of "capacity 82.4 req/s,
     * estimated from 2813 requests over 39 s (40 intervals); batch of 17 …; configured 40.0", "as configured
     * (no evidence yet)" of "capacity 40.0 req/s as configured (no evidence yet)".
     */
    static String evidence(String why) {
        int from = why.indexOf("estimated from ");
        if (from < 0) {
            int i = why.indexOf("req/s");
            return (i < 0 ? why : why.substring(i + "req/s".length())).replaceFirst("^[ ,]+", "");
        }
        String rest = why.substring(from);
        int end = rest.length();
        for (String stop : new String[]{" (", ";"}) {
            int i = rest.indexOf(stop);
            if (i >= 0) {
                end = Math.min(end, i);
            }
        }
        return rest.substring(0, end);
    }

    /** "last step: kept snapshot 3: expected gain 0.08 ms per request, not above …", or why there is none. */
    String stepLine() {
        if (health == null) {
            return "  control plane: " + error;
        }
        JsonNode s = health.path("last_step");
        if (s.isMissingNode() || s.isNull()) {
            return "  last step: none yet";
        }
        String reason = s.path("reason").asText("");
        if (s.path("published").asBoolean()) {
            return "  last step: published snapshot " + s.path("version").asText() + ": " + reason;
        }
        // "expected gain 0.08 ms …: snapshot 3 stays" → "kept snapshot 3: expected gain 0.08 ms …"
        Matcher m = STAYS.matcher(reason);
        return m.matches() ? "  last step: kept snapshot " + m.group(2) + ": " + m.group(1)
                : "  last step: kept: " + reason;
    }

    private static String rps(double v) {
        return Double.isNaN(v) ? "?" : v >= 100 || v == Math.rint(v) ? String.format(Locale.ROOT, "%.0f", v)
                : String.format(Locale.ROOT, "%.1f", v);
    }
}
