package dev.sextant.request;

/**
 * Events a gateway should log and count loudly. Called on the thread that noticed the event (a
 * request thread), once per change; implementations must be quick and must not block.
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
}
