package dev.sextant.server.control;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.config.SnapshotJson;
import dev.sextant.server.gateway.Fleet;
import dev.sextant.server.gateway.LogCapture;
import dev.sextant.snapshot.KeyOrder;
import dev.sextant.snapshot.Route;
import dev.sextant.snapshot.Snapshot;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code state_file}: every publication is kept, and a restarted control plane goes on from it, with the next
 * version and slot tables rebalanced from the ones its gateways hold; a bad file is said loudly and ignored.
 */
class ControlPlaneStateTest {
    static final String TOKEN = "state-test-token";

    @TempDir
    Path dir;

    private ControlPlaneConfig config(Path topology, Path stateFile) {
        // the schedule never fires during a test: every step is tickNow(); every gain is published, so that each
        // change of the topology's demand below makes a version
        return ControlPlaneConfig.defaults(topology, TOKEN).withIntervals(Duration.ofHours(1), Duration.ofHours(1),
                Duration.ofHours(1), Duration.ofSeconds(1), 3).withPublishGain(0, 0).withStateFile(stateFile);
    }

    @Test
    void restart_goesOnFromTheKeptSnapshot_nextVersion_andKeysStayOnTheirEngines() throws Exception {
        try (Fleet fleet = new Fleet(1)) {
            Path topology = dir.resolve("topology.yaml");
            Path state = dir.resolve("state.json");
            Files.writeString(topology, fleet.yaml(150));
            Snapshot held;
            try (ControlPlane first = ControlPlane.start(config(topology, state))) {
                assertThat(first.current().version()).isEqualTo(1);
                // a history of demand changes, each table rebalanced from the one before, so that the tables held
                // at the end differ from tables built afresh (a route over two groups rebalanced once can still
                // coincide with a fresh one)
                for (double demand : new double[] {40, 170, 90, 200, 120}) {
                    Files.writeString(topology, fleet.yaml(demand));
                    first.tickNow();
                }
                held = first.current();
                assertThat(held.version()).isEqualTo(6);
                assertThat(Fleet.await(() -> kept(state) == 6, Duration.ofSeconds(10))).isTrue();
            }
            assertThat(SnapshotJson.read(state).hash()).isEqualTo(held.hash());
            assertThat(dir.resolve("state.json.tmp")).doesNotExist();

            Snapshot withState;
            Snapshot without;
            try (ControlPlane again = ControlPlane.start(config(topology, state))) {
                withState = again.current();
            }
            try (ControlPlane fresh = ControlPlane.start(config(topology, null))) {
                without = fresh.current();
            }
            assertThat(withState.version()).as("the version after the kept one").isEqualTo(7);
            assertThat(without.version()).isEqualTo(1);
            assertThat(kept(state)).isEqualTo(7);

            double movedWith = movedKeys(held, withState, "gw", "chat");
            double movedWithout = movedKeys(held, without, "gw", "chat");
            assertThat(movedWithout).as("keys a restart without a state file moves to other engines").isGreaterThan(0.05);
            assertThat(movedWith).as("the same, with one").isLessThan(0.01);
        }
    }

    @Test
    void unusableStateFile_isSaidLoudly_andTheControlPlaneStartsAfresh() throws Exception {
        startsAfresh(state -> Files.writeString(state, "{\"version\": 7, \"routes\": "), "JSON syntax");
    }

    @Test
    void stateFileBeyondTheSnapshotLimit_isUnusable_andTheControlPlaneStartsAfresh() throws Exception {
        startsAfresh(state -> {
            try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(state.toFile(), "rw")) {
                f.setLength(SnapshotJson.MAX_FILE_BYTES + 1L); // sparse: no disk used
            }
        }, "file of 268435457 bytes (expected: at most 268435456)");
    }

    /** What a test writes as the state file before the start. */
    private interface StateWriter {
        void write(Path state) throws Exception;
    }

    /**
     * A control plane started on the state file {@code writer} writes says at SEVERE that it is unusable, {@code why},
     * starts at version 1 and overwrites it.
     */
    private void startsAfresh(StateWriter writer, String why) throws Exception {
        try (Fleet fleet = new Fleet(1); LogCapture log = new LogCapture()) {
            Path topology = dir.resolve("topology.yaml");
            Path state = dir.resolve("state.json");
            Files.writeString(topology, fleet.yaml(150));
            writer.write(state);
            try (ControlPlane cp = ControlPlane.start(config(topology, state))) {
                assertThat(cp.current().version()).isEqualTo(1);
                assertThat(log.any("SEVERE", "STATE FILE " + state + " unusable, starting afresh", why)).isTrue();
                assertThat(Fleet.await(() -> kept(state) == 1, Duration.ofSeconds(10))).as("then overwritten").isTrue();
            }
        }
    }

    /** The version in the state file, or -1 while it cannot be read. */
    static long kept(Path state) {
        try {
            return SnapshotJson.read(state).version();
        } catch (Exception e) {
            return -1;
        }
    }

    /** The share of 20,000 random keys whose first engine differs between the two snapshots' tables of a route. */
    private static double movedKeys(Snapshot a, Snapshot b, String gateway, String classId) {
        KeyOrder ta = table(a, a.route(gateway, classId));
        KeyOrder tb = table(b, b.route(gateway, classId));
        List<String> ia = ta.engineIds();
        List<String> ib = tb.engineIds();
        SplittableRandom random = new SplittableRandom(7);
        int moved = 0;
        int n = 20_000;
        for (int i = 0; i < n; i++) {
            long key = random.nextLong();
            if (!ia.get(ta.first(key)).equals(ib.get(tb.first(key)))) {
                moved++;
            }
        }
        return (double) moved / n;
    }

    private static KeyOrder table(Snapshot s, Route r) {
        assertThat(r.slots()).isNotEmpty();
        return r.keyOrder(s.groups());
    }
}
