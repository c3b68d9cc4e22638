package dev.sextant.server.tls;

import java.nio.file.Path;

/**
 * How a Sextant process verifies the servers it connects to over {@code https} (the control plane, engines), and
 * the certificate it presents when they ask for one. The server's certificate must chain to a trusted CA and name
 * the host of the URL (hostname verification is always on); a failed check fails the connection with the
 * handshake's reason.
 *
 * @param caFile          PEM CA certificate(s) to trust (config key {@code tls_ca_file}); null: the JDK's default
 *                        trust store
 * @param certificateFile PEM client certificate chain for mutual TLS (config key {@code tls_client_cert_file}), or
 *                        null; set together with {@code keyFile}
 * @param keyFile         its PEM PKCS#8 private key (config key {@code tls_client_key_file}), or null
 */
public record ClientTls(Path caFile, Path certificateFile, Path keyFile) {
    /** Trusts the JDK's default CAs, presents no client certificate. */
    public static final ClientTls DEFAULT = new ClientTls(null, null, null);

    public ClientTls {
        if ((certificateFile == null) != (keyFile == null)) {
            throw new IllegalArgumentException("tls_client_cert_file, tls_client_key_file: " + certificateFile + ", "
                    + keyFile + " (expected: both or neither)");
        }
    }

    /** Trusts the CA(s) in {@code caFile}, presents no client certificate. */
    public static ClientTls trusting(Path caFile) {
        return new ClientTls(caFile, null, null);
    }
}
