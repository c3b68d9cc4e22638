package dev.sextant.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.server.gateway.LogCapture;
import dev.sextant.server.tls.TestPki;
import dev.sextant.snapshot.Snapshot;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.auth.Permission;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sextant against an etcd that requires what a production one does (docs/etcd.md): client certificates over TLS
 * (a throw-away CA), and authentication with a user whose role may only read and write the fleet's prefix. A
 * leader publishes and a gateway's source reads through it; a wrong password or a missing certificate is refused.
 */
class EtcdSecurityIT {
    private static final String PREFIX = "/secure";
    private static final String PASSWORD = "s3cret-for-tests";

    @TempDir
    static Path dir;
    static Process member;
    static URI endpoint;
    static TestPki pki;
    static TestPki.Issued client;

    @BeforeAll
    static void startSecuredEtcd() throws Exception {
        pki = new TestPki(dir, "etcd");
        TestPki.Issued server = pki.issue("member");
        client = pki.issue("sextant");
        int clientPort = EtcdCluster.freePort();
        int peerPort = EtcdCluster.freePort();
        endpoint = URI.create("https://127.0.0.1:" + clientPort);
        member = new ProcessBuilder(EtcdCluster.binary(), "--name", "secure", "--data-dir", dir.resolve("data").toString(),
                "--listen-client-urls", endpoint.toString(), "--advertise-client-urls", endpoint.toString(),
                "--listen-peer-urls", "http://127.0.0.1:" + peerPort,
                "--initial-advertise-peer-urls", "http://127.0.0.1:" + peerPort,
                "--initial-cluster", "secure=http://127.0.0.1:" + peerPort,
                "--cert-file", server.certificateFile().toString(), "--key-file", server.keyFile().toString(),
                "--trusted-ca-file", pki.caFile.toString(), "--client-cert-auth")
                .redirectErrorStream(true).redirectOutput(dir.resolve("member.log").toFile()).start();
        // as an operator would: a root user, then a user whose role holds the fleet's prefix only, then auth on
        try (Client root = Client.builder().endpoints(endpoint).sslContext(ssl -> {
            ssl.trustManager(pki.caFile.toFile());
            ssl.keyManager(client.certificateFile().toFile(), client.keyFile().toFile());
        }).build()) {
            AtomicReference<Exception> last = new AtomicReference<>();
            boolean up = EtcdCluster.await(() -> {
                try {
                    root.getKVClient().get(bytes("/probe")).get(2, TimeUnit.SECONDS);
                    return true;
                } catch (Exception e) {
                    last.set(e);
                    return false;
                }
            }, Duration.ofSeconds(30));
            assertThat(up).as("etcd over TLS answers (last error: %s; see %s)", last.get(), dir).isTrue();
            var auth = root.getAuthClient();
            auth.userAdd(bytes("root"), bytes("root-" + PASSWORD)).get(5, TimeUnit.SECONDS);
            auth.roleAdd(bytes("root")).get(5, TimeUnit.SECONDS);
            auth.userGrantRole(bytes("root"), bytes("root")).get(5, TimeUnit.SECONDS);
            auth.userAdd(bytes("sextant"), bytes(PASSWORD)).get(5, TimeUnit.SECONDS);
            auth.roleAdd(bytes("fleet")).get(5, TimeUnit.SECONDS);
            auth.roleGrantPermission(bytes("fleet"), bytes(PREFIX + "/"), bytes(PREFIX + "0"), Permission.Type.READWRITE)
                    .get(5, TimeUnit.SECONDS);
            auth.userGrantRole(bytes("sextant"), bytes("fleet")).get(5, TimeUnit.SECONDS);
            auth.authEnable().get(5, TimeUnit.SECONDS);
        }
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (member != null) {
            member.destroy();
            if (!member.waitFor(10, TimeUnit.SECONDS)) {
                member.destroyForcibly().waitFor();
            }
        }
    }

    @Test
    void leaderAndGateway_overTls_asAUserOfTheFleetsPrefix_publishAndRead() throws IOException {
        EtcdOptions o = options(passwordFile(PASSWORD), client);
        try (EtcdLeadership l = EtcdCluster.leader(o, ViewCodec.MAX_VALUE_BYTES);
             Recording east = new Recording(Etcd.source(o, "east", Duration.ofSeconds(1)))) {
            Snapshot s = Snapshots.version(3);
            l.publish(s);
            AtomicReference<Snapshot> got = new AtomicReference<>();
            east.start(got::set);
            assertThat(EtcdCluster.await(() -> got.get() != null, Duration.ofSeconds(20))).isTrue();
            assertThat(got.get()).isEqualTo(s.forGateway("east"));
        }
    }

    @Test
    void wrongPassword_leadsNothing_andSaysEtcdsReason() throws IOException {
        assertThat(campaignOnce(options(passwordFile("not-" + PASSWORD), client))).anySatisfy(l -> assertThat(l)
                .startsWith(WARNING + "etcd refused this client: UNAUTHENTICATED").contains("etcd.password_file"));
    }

    @Test
    void noClientCertificate_leadsNothing_andSaysEtcdIsUnreachable() throws IOException {
        assertThat(campaignOnce(options(passwordFile(PASSWORD), null)))
                .anySatisfy(l -> assertThat(l).startsWith(WARNING + "etcd unreachable"));
    }

    /** How a warning of the leadership reads in a {@link LogCapture}. */
    private static final String WARNING = "WARNING " + EtcdLeadership.class.getName() + ": ";

    /** One campaign step of a replica of {@code o}, driven by hand: asserts it does not lead; returns what it logged. */
    private static List<String> campaignOnce(EtcdOptions o) {
        try (LogCapture log = new LogCapture();
             EtcdLeadership l = (EtcdLeadership) Etcd.leadership(o, ViewCodec.MAX_VALUE_BYTES)) {
            l.joinUnscheduled(URI.create("http://127.0.0.1:7002"));
            l.renew();
            assertThat(l.leading()).isFalse();
            return log.lines();
        }
    }

    private static EtcdOptions options(Path passwordFile, TestPki.Issued certificate) {
        return new EtcdOptions(List.of(endpoint), PREFIX, "sextant", passwordFile, pki.caFile,
                certificate == null ? null : certificate.certificateFile(),
                certificate == null ? null : certificate.keyFile(), Duration.ofSeconds(2), null);
    }

    private static Path passwordFile(String password) throws IOException {
        return Files.writeString(Files.createTempFile(dir, "password", ".txt"), password + "\n");
    }

    private static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }
}
