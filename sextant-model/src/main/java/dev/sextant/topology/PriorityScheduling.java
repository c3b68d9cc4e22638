package dev.sextant.topology;

import java.util.Locale;

/**
 * Whether an engine orders its waiting requests by a {@code priority} field of the request body, and which way.
 *
 * <p>An engine with priority scheduling admits a waiting request of a more important class before requests of less
 * important classes that came earlier, so under a backlog the most important class waits only for a free batch slot,
 * not behind the whole queue. The gateway then writes the request's class priority into the body it forwards
 * (docs/request-path.md, "Priority at the engine"); to an engine without it the gateway writes nothing, because vLLM
 * refuses a non-zero {@code priority} when it schedules first come, first served.
 */
public enum PriorityScheduling {
    /** First come, first served (vLLM's and SGLang's default): no {@code priority} is sent. */
    NONE,
    /**
     * Lower values first, ties by arrival: vLLM started with {@code --scheduling-policy priority}, or SGLang with
     * {@code --enable-priority-scheduling --schedule-low-priority-values-first}. A class of priority p is sent as −p.
     */
    LOWER_FIRST,
    /** Higher values first: SGLang started with {@code --enable-priority-scheduling}. A class of priority p is sent as p. */
    HIGHER_FIRST;

    /** The value to write into the body of a request of a class of priority {@code classPriority}. */
    public int value(int classPriority) {
        return this == LOWER_FIRST ? -classPriority : classPriority;
    }

    /** The name configuration files and snapshots use: {@code none}, {@code lower_first}, {@code higher_first}. */
    public String word() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The value named {@code word}, or null when it names none. */
    public static PriorityScheduling of(String word) {
        for (PriorityScheduling s : values()) {
            if (s.word().equals(word)) {
                return s;
            }
        }
        return null;
    }
}
