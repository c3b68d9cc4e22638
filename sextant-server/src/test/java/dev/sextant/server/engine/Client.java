package dev.sextant.server.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.concurrent.locks.LockSupport;

/** A test client for one engine over real loopback sockets. */
final class Client {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration DEADLINE = Duration.ofSeconds(20);

    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    final URI base;

    Client(EngineEmulator engine) {
        this.base = URI.create("http://127.0.0.1:" + engine.port());
    }

    HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(base.resolve(path)).timeout(DEADLINE);
    }

    HttpResponse<String> post(String path, String body) {
        return send(request(path).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    HttpResponse<String> get(String path) {
        return send(request(path).GET().build());
    }

    HttpResponse<String> send(HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static JsonNode json(HttpResponse<String> response) {
        try {
            return JSON.readTree(response.body());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The server-sent events of a streaming POST, in order, as read ({@code data} of each); {@code names} the
     * {@code event:} lines among them, in order; {@code onEvent} sees each data as it arrives.
     */
    record Stream(int status, String engineId, List<String> events, List<String> names, IOException failure) {
    }

    Stream stream(String path, String body, Consumer<String> onEvent) {
        HttpRequest request = request(path).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        List<String> events = new ArrayList<>();
        List<String> names = new ArrayList<>();
        HttpResponse<InputStream> response;
        try {
            response = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
        } catch (IOException e) {
            return new Stream(-1, null, events, names, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        try (BufferedReader reader = new BufferedReader(
                new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                if (line.startsWith("data: ")) {
                    String event = line.substring("data: ".length());
                    onEvent.accept(event);
                    events.add(event);
                } else if (line.startsWith("event: ")) {
                    names.add(line.substring("event: ".length()));
                }
            }
        } catch (IOException e) {
            return new Stream(response.statusCode(), response.headers().firstValue("x-engine-id").orElse(null),
                    events, names, e);
        }
        return new Stream(response.statusCode(), response.headers().firstValue("x-engine-id").orElse(null), events,
                names, null);
    }

    /** Waits until {@code condition} holds; fails after a generous deadline. */
    static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            LockSupport.parkNanos(2_000_000); // polling interval of the condition
        }
    }
}
