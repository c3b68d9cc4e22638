package dev.sextant.request;

/**
 * Events a gateway should log and count loudly. Called on the thread that noticed the event (a
 * request thread, or for {@link #onLocalSlotTable} the thread that swaps snapshots in), once per
 * change; implementations must be quick and must not block.
 */
public interface DataPlaneListener {
    /** A listener that ignores everything. */
    DataPlaneListener NONE = new DataPlaneListener() {
    };

    /**
     * The data plane entered ({@code fallback} true) or left fallback mode.
     *
     * @param reason e.g. {@code "snapshot 12 is 301 s old (limit 300 s)"}
     */
    default void onFallback(boolean fallback, String reason) {
    }

    /** An engine was ejected. */
    default void onEjection(Ejection ejection) {
    }

    /**
     * An ejection ended before its time ({@code ejection.untilNanos()} is when): a slow engine made room, at the cap of
     * ejected engines, for one that fails. Called before the {@link #onEjection} of the engine that took its place.
     *
     * @param why e.g. {@code "its place went to e1, which fails rather than answers slowly, at the cap …"}
     */
    default void onEjectionEnded(Ejection ejection, String why) {
    }

    /**
     * A swapped-in snapshot gave class {@code classId} no usable slot table (none, corrupt, or not
     * matching the weights), so this gateway built one from the weights alone: it routes by the
     * weights, but gateways that built theirs differently (or got a valid one) may choose other
     * engines for some keys. Called once per such class for every new snapshot swapped in.
     *
     * @param reason e.g. {@code "snapshot 4, class 'chat': the snapshot carries no slot table; …"}
     */
    default void onLocalSlotTable(String classId, String reason) {
    }
}
