package dev.sextant.server.tls;

import dev.sextant.config.BoundedFile;
import dev.sextant.config.ConfigProblem;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;

/**
 * Builds TLS contexts from {@link ServerTls} and {@link ClientTls}: Netty {@link SslContext}s for the Netty servers
 * and the gateway's engine connections, and a JDK {@link SSLContext} for the {@code java.net.http} clients (the
 * gateway's long-poll and reports, the control plane's scrapes). Always the JDK's TLS provider; client contexts
 * check the server's hostname ({@code HTTPS} endpoint identification). Problems with the files are
 * {@link IllegalArgumentException}s naming the config key and the file, never the file's contents.
 */
public final class TlsContexts {
    /**
     * Largest PEM file read, bytes (1 MiB): a certificate chain or a key is a few KB, and a bundle of every public
     * CA (a system's {@code ca-certificates}) about 200 KB.
     */
    public static final int MAX_PEM_BYTES = 1 << 20;

    private TlsContexts() {
    }

    /** A server context; with {@link ServerTls#clientCaFile()}, client certificates are required. */
    public static SslContext server(ServerTls tls) {
        return server(tls, false);
    }

    /**
     * As {@link #server(ServerTls)}; with {@code http2}, the handshake offers {@code h2} and {@code http/1.1} by ALPN
     * (in that order of preference), and a client that offers neither, or no ALPN at all, gets HTTP/1.1.
     */
    public static SslContext server(ServerTls tls, boolean http2) {
        InputStream cert = pem("tls_cert_file", tls.certificateFile());
        InputStream key = pem("tls_key_file", tls.keyFile());
        try {
            SslContextBuilder b = SslContextBuilder.forServer(cert, key).sslProvider(SslProvider.JDK);
            if (tls.clientCaFile() != null) {
                b.trustManager(pem("tls_client_ca_file", tls.clientCaFile())).clientAuth(ClientAuth.REQUIRE);
            }
            if (http2) {
                b.applicationProtocolConfig(new ApplicationProtocolConfig(ApplicationProtocolConfig.Protocol.ALPN,
                        ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                        ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                        ApplicationProtocolNames.HTTP_2, ApplicationProtocolNames.HTTP_1_1));
            }
            return b.build();
        } catch (SSLException | RuntimeException e) {
            throw new IllegalArgumentException("tls_cert_file, tls_key_file: " + tls.certificateFile() + ", "
                    + tls.keyFile() + ": not a usable PEM certificate chain and PKCS#8 private key (" + e.getMessage()
                    + ")", e);
        }
    }

    /** A Netty client context; {@code tls} null means {@link ClientTls#DEFAULT}. */
    public static SslContext client(ClientTls tls) {
        ClientTls t = tls == null ? ClientTls.DEFAULT : tls;
        try {
            SslContextBuilder b = SslContextBuilder.forClient().sslProvider(SslProvider.JDK)
                    .endpointIdentificationAlgorithm("HTTPS");
            if (t.caFile() != null) {
                b.trustManager(pem("tls_ca_file", t.caFile()));
            }
            if (t.certificateFile() != null) {
                b.keyManager(pem("tls_client_cert_file", t.certificateFile()),
                        pem("tls_client_key_file", t.keyFile()));
            }
            return b.build();
        } catch (SSLException | RuntimeException e) {
            if (e instanceof IllegalArgumentException iae && iae.getMessage() != null
                    && iae.getMessage().startsWith("tls_")) {
                throw iae;
            }
            throw new IllegalArgumentException("tls_ca_file, tls_client_cert_file, tls_client_key_file: " + t.caFile()
                    + ", " + t.certificateFile() + ", " + t.keyFile() + ": not usable PEM files (" + e.getMessage()
                    + ")", e);
        }
    }

    /** The same client context as a JDK {@link SSLContext}, for {@code java.net.http.HttpClient}. */
    public static SSLContext jdkClient(ClientTls tls) {
        return ((JdkSslContext) client(tls)).context();
    }

    /**
     * The bytes of the PEM file {@code key} names, read here rather than by Netty, which reads a file whole, so that a
     * file beyond {@link #MAX_PEM_BYTES} ({@code /dev/zero}) is refused naming the key and the file; for every TLS
     * client and server the project builds (its listeners, its etcd client).
     *
     * @throws IllegalArgumentException naming {@code key} and the file when it cannot be read or is too large
     */
    public static InputStream pem(String key, Path file) {
        if (!Files.isReadable(file)) {
            throw new IllegalArgumentException(key + ": " + file + " (expected: a readable PEM file)");
        }
        try {
            return new ByteArrayInputStream(BoundedFile.read(file, MAX_PEM_BYTES));
        } catch (IOException e) {
            throw new IllegalArgumentException(key + ": " + file + ": " + ConfigProblem.cannotRead(e));
        }
    }
}
