package dev.sextant.server.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What became of the requests of one fault case, as the client saw them. Every request ends in exactly one of:
 * <ul>
 *   <li><b>completed</b>: 200 with a whole body (a chat completion with a finish reason, or an event stream whose
 *       last event is {@code data: [DONE]});</li>
 *   <li><b>failed with an error</b>: a status ≥ 400 with an OpenAI error body ({@code error.message} and
 *       {@code error.code} set), or an event stream whose last event is an OpenAI error, cleanly ended;</li>
 *   <li><b>lost</b>: anything else: a hang past the client's deadline, a connection cut without an error, a body
 *       that is neither whole nor an error. The invariant (docs/design.md §6, 2) is that there are none.</li>
 * </ul>
 * Besides, it counts the attempts the gateway reported ({@code x-sextant-attempts}), every answer served by an
 * engine outside the request's allowed set, and (from the engines' own counts, {@link #generatedTwice(int)}) the
 * requests that more than one attempt generated. Thread-safe.
 *
 * <p>{@link #print()} writes one row of the table in {@code docs/reliability-faults.md} to standard output and,
 * when the system property {@code sextant.faults.report} names a file, appends it there.
 */
final class Tally {
    /** The table's header, two lines of Markdown. */
    static final String HEADER = "| case | sent | completed | failed with error | lost | retries | max attempts "
            + "| generated twice | statuses |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |";

    final String name;
    private final AtomicInteger sent = new AtomicInteger();
    private final AtomicInteger completed = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    private final AtomicInteger retries = new AtomicInteger();
    private final AtomicInteger maxAttempts = new AtomicInteger();
    private final Map<String, AtomicInteger> statuses = new TreeMap<>();
    private final List<String> lost = new CopyOnWriteArrayList<>();
    private final List<String> errorSamples = new CopyOnWriteArrayList<>();
    private final List<String> outsideAllowedSet = new CopyOnWriteArrayList<>();
    private final Map<String, AtomicInteger> servedBy = new java.util.concurrent.ConcurrentHashMap<>();
    private final List<String> requestIds = new CopyOnWriteArrayList<>();
    private volatile int generatedTwice = -1;

    Tally(String name) {
        this.name = name;
    }

    /**
     * A request is sent: returns its {@code x-request-id}, the case's name and the request's number in this tally (the
     * gateway passes the id on to the engines, whose generations are counted by it).
     */
    String sent() {
        String id = name.replaceAll("[^A-Za-z0-9-]", "-") + "-" + sent.getAndIncrement();
        requestIds.add(id);
        return id;
    }

    /** The {@code x-request-id} of every request sent. */
    List<String> requestIds() {
        return List.copyOf(requestIds);
    }

    /** Sets how many of the requests were generated (had a token produced) by more than one attempt, as counted. */
    void generatedTwice(int n) {
        generatedTwice = n;
    }

    void completed(int attempts) {
        completed.incrementAndGet();
        attempts(attempts);
        count("200");
    }

    /** An explicit error: {@code what} is the status, or {@code "200+sse-error"} for an error event in a stream. */
    void failed(String what, int attempts, String message) {
        if (errorSamples.size() < 6) {
            errorSamples.add(what + ": " + message);
        }
        failed.incrementAndGet();
        attempts(attempts);
        count(what);
    }

    void lost(String why) {
        lost.add(why);
        count("lost");
    }

    /** A complete answer came from {@code engine}. */
    void servedBy(String engine) {
        servedBy.computeIfAbsent(engine, k -> new AtomicInteger()).incrementAndGet();
    }

    /** Complete answers from {@code engine}. */
    int served(String engine) {
        AtomicInteger n = servedBy.get(engine);
        return n == null ? 0 : n.get();
    }

    void outsideAllowedSet(String what) {
        outsideAllowedSet.add(what);
    }

    private void attempts(int n) {
        if (n > 0) {
            retries.addAndGet(n - 1);
            maxAttempts.accumulateAndGet(n, Math::max);
        }
    }

    private void count(String s) {
        synchronized (statuses) {
            statuses.computeIfAbsent(s, k -> new AtomicInteger()).incrementAndGet();
        }
    }

    int sentCount() {
        return sent.get();
    }

    int completedCount() {
        return completed.get();
    }

    int failedCount() {
        return failed.get();
    }

    int lostCount() {
        return lost.size();
    }

    /** Retries the gateway reported over all answers (attempts − 1 each). */
    int retriesReported() {
        return retries.get();
    }

    int maxAttemptsReported() {
        return maxAttempts.get();
    }

    /** How many answers had {@code status} ("200", "503", "200+sse-error", "lost"). */
    int statusCount(String s) {
        synchronized (statuses) {
            AtomicInteger n = statuses.get(s);
            return n == null ? 0 : n.get();
        }
    }

    /**
     * The invariants every case holds: every request sent ended (completed + failed + lost = sent), none was lost,
     * none was answered by an engine outside its allowed set, and no request took more than {@code maxAttempts}.
     */
    void assertSound(int maxAttemptsAllowed) {
        assertThat(lost).as(name + ": lost requests").isEmpty();
        assertThat(outsideAllowedSet).as(name + ": answers from engines outside the allowed set").isEmpty();
        assertThat(completed.get() + failed.get()).as(name + ": every request sent ended").isEqualTo(sent.get());
        assertThat(maxAttempts.get()).as(name + ": attempts per request").isLessThanOrEqualTo(maxAttemptsAllowed);
    }

    /** The table row. */
    String row() {
        String st;
        synchronized (statuses) {
            StringBuilder b = new StringBuilder();
            statuses.forEach((k, v) -> b.append(b.length() == 0 ? "" : ", ").append(k).append(" × ").append(v.get()));
            st = b.toString();
        }
        return "| " + name + " | " + sent.get() + " | " + completed.get() + " | " + failed.get() + " | " + lost.size()
                + " | " + retries.get() + " | " + maxAttempts.get() + " | " + (generatedTwice < 0 ? "—" : generatedTwice)
                + " | " + st + " |";
    }

    /** Prints the row, and appends it to the file named by {@code sextant.faults.report} if set. */
    void print() {
        String row = row();
        System.out.println("FAULT-TALLY " + row);
        String file = System.getProperty("sextant.faults.report");
        if (file != null && !file.isBlank()) {
            try {
                Path p = Path.of(file);
                synchronized (Tally.class) {
                    if (!Files.exists(p)) {
                        Files.writeString(p, HEADER + "\n", StandardCharsets.UTF_8);
                    }
                    Files.writeString(p, row + "\n", StandardCharsets.UTF_8, StandardOpenOption.APPEND);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        errorSamples.forEach(e -> System.out.println("FAULT-TALLY " + name + " error: " + e));
        if (!lost.isEmpty()) {
            System.out.println("FAULT-TALLY " + name + " lost: " + lost.subList(0, Math.min(5, lost.size())));
        }
    }
}
