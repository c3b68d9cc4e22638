package dev.sextant.etcd;

import dev.sextant.server.tls.TlsContexts;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** The etcd client {@link EtcdOptions} describe, and waiting on its answers with a deadline. */
final class Clients {
    /** How long one request to etcd may take before it counts as etcd unreachable. */
    static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(3);

    private Clients() {
    }

    /** A client of {@code o}'s members; reads the password and TLS files now, so a bad file fails the start. */
    static Client connect(EtcdOptions o) {
        ClientBuilder b = Client.builder().endpoints(o.endpoints().toArray(new java.net.URI[0]))
                .connectTimeout(Duration.ofSeconds(2)).retryMaxDuration(REQUEST_TIMEOUT);
        if (o.user() != null) {
            String password;
            try {
                // read to a token file's bound: a password file of /dev/zero would otherwise fill the heap
                password = dev.sextant.config.BoundedFile.readString(o.passwordFile(),
                        dev.sextant.server.auth.BearerToken.MAX_FILE_BYTES).lines().findFirst().orElse("");
            } catch (IOException e) {
                throw new IllegalArgumentException("etcd.password_file: " + o.passwordFile() + ": "
                        + dev.sextant.config.ConfigProblem.cannotRead(e));
            }
            if (password.isEmpty()) {
                throw new IllegalArgumentException("etcd.password_file: " + o.passwordFile()
                        + " (expected: the password on its first line)");
            }
            b.user(ByteSequence.from(o.user(), StandardCharsets.UTF_8))
                    .password(ByteSequence.from(password, StandardCharsets.UTF_8));
        }
        boolean https = o.endpoints().stream().anyMatch(u -> u.getScheme().equals("https"));
        if (https || o.caFile() != null || o.certFile() != null) {
            try {
                b.sslContext(ssl -> {
                    // read here within a PEM file's bound, not by Netty, which reads a file whole
                    if (o.caFile() != null) {
                        ssl.trustManager(TlsContexts.pem("etcd.ca_file", o.caFile()));
                    }
                    if (o.certFile() != null) {
                        ssl.keyManager(TlsContexts.pem("etcd.cert_file", o.certFile()),
                                TlsContexts.pem("etcd.key_file", o.keyFile()));
                    }
                });
            } catch (javax.net.ssl.SSLException | RuntimeException e) {
                throw new IllegalArgumentException("etcd.ca_file, etcd.cert_file: unusable (" + e.getMessage() + ")");
            }
        }
        return b.build();
    }

    /** {@code f}'s value within {@link #REQUEST_TIMEOUT}; an {@link EtcdUnavailable} when etcd did not answer. */
    static <T> T await(CompletableFuture<T> f) {
        try {
            return f.get(REQUEST_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            f.cancel(true);
            throw new EtcdUnavailable("interrupted", e);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new EtcdUnavailable("no answer within " + REQUEST_TIMEOUT.toMillis() + " ms", e);
        } catch (ExecutionException e) {
            Throwable c = e.getCause() == null ? e : e.getCause();
            io.grpc.Status status = io.grpc.Status.fromThrowable(c);
            if (status.getCode() == io.grpc.Status.Code.UNAUTHENTICATED
                    || status.getCode() == io.grpc.Status.Code.PERMISSION_DENIED) {
                throw new EtcdUnavailable("etcd refused this client: " + status.getCode()
                        + (status.getDescription() == null ? "" : " (" + status.getDescription() + ")")
                        + "; check etcd.user, etcd.password_file and that the user's role may read and write "
                        + "etcd.prefix", c, true);
            }
            throw new EtcdUnavailable(c.getMessage() == null ? c.toString() : c.getMessage(), c);
        }
    }

    /** Closes a watch that ended or failed; it may be closed already. */
    static void closeQuietly(io.etcd.jetcd.Watch.Watcher w) {
        if (w == null) {
            return;
        }
        try {
            w.close();
        } catch (RuntimeException ignored) {
            // closed already
        }
    }

    /** etcd did not answer, or answered with an error. */
    static final class EtcdUnavailable extends RuntimeException {
        private static final long serialVersionUID = 1L;
        /** Whether etcd answered and refused the client's credentials or rights (not a matter of reaching it). */
        final boolean refused;

        EtcdUnavailable(String message, Throwable cause) {
            this(message, cause, false);
        }

        EtcdUnavailable(String message, Throwable cause, boolean refused) {
            super(message, cause);
            this.refused = refused;
        }
    }
}
