package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The etcd client's own files, read when it is built: within their bounds, and named when refused. */
class ClientsTest {
    private static final List<URI> ENDPOINTS = List.of(URI.create("https://127.0.0.1:2379"));
    private static final Path ENDLESS = Path.of("/dev/zero"); // a file with no end: read whole, it fills the heap

    @Test
    void connect_endlessPasswordFile_isRefusedNamingIt() {
        EtcdOptions o = new EtcdOptions(ENDPOINTS, "/s", "sextant", ENDLESS, null, null, null, Duration.ofSeconds(5),
                null);
        assertThatThrownBy(() -> Clients.connect(o)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("etcd.password_file: /dev/zero: more than 1048576 bytes (expected: at most 1048576)");
    }

    @Test
    void connect_endlessCaFile_isRefusedNamingIt() {
        EtcdOptions o = new EtcdOptions(ENDPOINTS, "/s", null, null, ENDLESS, null, null, Duration.ofSeconds(5), null);
        assertThatThrownBy(() -> Clients.connect(o)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("etcd.ca_file: /dev/zero: more than 1048576 bytes (expected: at most 1048576)");
    }
}
