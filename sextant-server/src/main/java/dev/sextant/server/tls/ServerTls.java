package dev.sextant.server.tls;

import java.nio.file.Path;

/**
 * TLS on a server's listener: its certificate chain and private key as PEM files, and optionally the CA whose
 * client certificates it requires (mutual TLS).
 *
 * @param certificateFile PEM certificate chain, the server's own certificate first (config key {@code tls_cert_file})
 * @param keyFile         PEM private key in PKCS#8 ({@code BEGIN PRIVATE KEY}; config key {@code tls_key_file})
 * @param clientCaFile    PEM CA certificate(s); when set, a client must present a certificate they signed, else the
 *                        handshake fails (config key {@code tls_client_ca_file}); null: no client certificate asked
 */
public record ServerTls(Path certificateFile, Path keyFile, Path clientCaFile) {
    public ServerTls {
        if (certificateFile == null) {
            throw new IllegalArgumentException("tls_cert_file: missing (expected: a PEM certificate chain, with tls_key_file)");
        }
        if (keyFile == null) {
            throw new IllegalArgumentException("tls_key_file: missing (expected: a PEM PKCS#8 private key, with tls_cert_file)");
        }
    }
}
