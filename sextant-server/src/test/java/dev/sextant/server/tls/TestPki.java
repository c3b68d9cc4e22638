package dev.sextant.server.tls;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.util.Base64;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A throw-away PKI for tests, made at run time in a temporary directory: a CA, and certificates it signs for
 * {@code localhost} / {@code 127.0.0.1} (EC P-256, valid for a day). Nothing here is ever committed.
 */
public final class TestPki {
    private static final AtomicLong SERIAL = new AtomicLong(System.nanoTime());

    private final Path dir;
    private final String name;
    private final KeyPair caKeys;
    private final X509Certificate ca;
    /** The CA certificate, PEM. */
    public final Path caFile;

    /** A new CA named {@code name}, its files in {@code dir}. */
    public TestPki(Path dir, String name) throws Exception {
        this.dir = dir;
        this.name = name;
        this.caKeys = keys();
        X500Name subject = new X500Name("CN=" + name + " test CA");
        JcaX509v3CertificateBuilder b = builder(subject, subject, caKeys);
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        this.ca = sign(b, caKeys.getPrivate());
        this.caFile = write(name + "-ca.pem", pem("CERTIFICATE", ca.getEncoded()));
    }

    /** A certificate and key for {@code localhost} and {@code 127.0.0.1}, good for servers and clients. */
    public Issued issue(String who) throws Exception {
        return issue(who, new GeneralName(GeneralName.dNSName, "localhost"),
                new GeneralName(GeneralName.iPAddress, "127.0.0.1"));
    }

    /** A certificate and key for the given names only. */
    public Issued issue(String who, GeneralName... names) throws Exception {
        KeyPair keys = keys();
        JcaX509v3CertificateBuilder b = builder(new X500Name("CN=" + name + " test CA"), new X500Name("CN=" + who), keys);
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
        b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyAgreement));
        b.addExtension(Extension.extendedKeyUsage, false,
                new ExtendedKeyUsage(new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}));
        b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names));
        X509Certificate cert = sign(b, caKeys.getPrivate());
        Path certFile = write(name + "-" + who + ".pem", pem("CERTIFICATE", cert.getEncoded()));
        Path keyFile = write(name + "-" + who + "-key.pem", pem("PRIVATE KEY", keys.getPrivate().getEncoded()));
        return new Issued(certFile, keyFile);
    }

    /** A certificate chain file and its PKCS#8 key file. */
    public record Issued(Path certificateFile, Path keyFile) {
        /** As a server's TLS, without client certificates. */
        public ServerTls server() {
            return new ServerTls(certificateFile, keyFile, null);
        }
    }

    private static KeyPair keys() throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"));
        return g.generateKeyPair();
    }

    private static JcaX509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair keys) {
        long now = System.currentTimeMillis();
        return new JcaX509v3CertificateBuilder(issuer, BigInteger.valueOf(SERIAL.incrementAndGet()),
                new Date(now - 3_600_000L), new Date(now + 86_400_000L), subject, keys.getPublic());
    }

    private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey key) throws Exception {
        ContentSigner signer = new JcaContentSignerBuilder("SHA256withECDSA").build(key);
        return new JcaX509CertificateConverter().getCertificate(b.build(signer));
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                .encodeToString(der) + "\n-----END " + type + "-----\n";
    }

    private Path write(String file, String text) throws Exception {
        return Files.writeString(dir.resolve(file), text);
    }
}
