package dev.sextant.server.gateway;

import dev.sextant.config.SnapshotException;
import dev.sextant.config.SnapshotJson;
import dev.sextant.server.internal.Http;
import dev.sextant.snapshot.Snapshot;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.logging.Logger;

/**
 * The gateway's {@code snapshot_cache_file}: the last snapshot it took, kept on disk so that a gateway restarted while
 * the control plane cannot be reached still has something to route by (static stability across a restart, not only
 * while running). Every snapshot taken is written (to a temporary file beside it, then moved over it atomically, so a
 * crash leaves the old or the new one); a "not modified" answer only sets the file's time, which is when the snapshot
 * was last confirmed: a snapshot started from is as old as that, so one older than {@code max_snapshot_age} starts in
 * fallback mode. A file that cannot be written is logged (once until it can again) and serving goes on.
 */
final class SnapshotCache {
    private static final Logger LOG = Logger.getLogger(SnapshotCache.class.getName());

    /** A snapshot read back, and how long ago it was last confirmed. */
    record Entry(Snapshot snapshot, Duration age) {
    }

    private final Path file;
    private final String gatewayCluster;
    private long keptVersion = -1;
    private String keptHash = "";
    private boolean failing;

    SnapshotCache(Path file, String gatewayCluster) {
        this.file = file;
        this.gatewayCluster = gatewayCluster;
    }

    Path file() {
        return file;
    }

    /**
     * The kept snapshot, or null when there is none (a first start) or it cannot be used: unreadable, not a snapshot,
     * its content not matching its hash, its version beyond what may be adopted, or another gateway
     * cluster's (each logged at WARNING).
     */
    Entry read() {
        if (!Files.exists(file)) {
            return null;
        }
        try {
            Snapshot s = dev.sextant.server.internal.Versions.readKept(file);
            if (!s.routes().isEmpty() && !s.routes().containsKey(gatewayCluster)) {
                throw new IllegalArgumentException("it routes gateway cluster " + s.routes().keySet()
                        + ", not '" + gatewayCluster + "'");
            }
            FileTime confirmed = Files.getLastModifiedTime(file);
            keptVersion = s.version();
            keptHash = s.hash();
            return new Entry(s, Duration.ofMillis(Math.max(0, System.currentTimeMillis() - confirmed.toMillis())));
        } catch (SnapshotException | IOException | RuntimeException e) {
            LOG.warning("SNAPSHOT CACHE " + file + " not used: " + e.getMessage());
            return null;
        }
    }

    /** Keeps {@code s}: writes it when it is not the kept one, else marks the kept one confirmed now. */
    synchronized void keep(Snapshot s) {
        try {
            if (s.version() == keptVersion && s.hash().equals(keptHash) && Files.exists(file)) {
                Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis()));
            } else {
                Http.writeAtomically(file, SnapshotJson.write(s));
                keptVersion = s.version();
                keptHash = s.hash();
            }
            if (failing) {
                LOG.info("snapshot cache " + file + " written again (snapshot " + s.version() + ")");
                failing = false;
            }
        } catch (IOException | RuntimeException e) {
            if (!failing) {
                LOG.warning("SNAPSHOT CACHE " + file + " not written (snapshot " + s.version() + "): " + e
                        + "; serving goes on, but a restart without the control plane would find no snapshot here");
                failing = true;
            }
        }
    }
}
