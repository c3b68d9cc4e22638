package dev.sextant.etcd;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * How to reach etcd and where Sextant's keys live there (docs/etcd.md).
 *
 * @param endpoints    the etcd members' client URLs, {@code http://host:2379} or {@code https://…}, at least one
 * @param prefix       the key prefix of this fleet, starting with {@code /} ({@code /sextant}); several fleets may
 *                     share an etcd cluster under different prefixes
 * @param user         etcd user name, or null (no authentication)
 * @param passwordFile file whose first line is the user's password; required with {@code user}
 * @param caFile       PEM CA bundle that verifies {@code https} members, or null (the JDK's CAs)
 * @param certFile     PEM client certificate for members that require one, or null; with {@code keyFile}
 * @param keyFile      PEM private key of {@code certFile}, or null
 * @param leaseTtl     the control plane's lease: how long a leader that stopped renewing stays leader, ≥ 2 s
 * @param advertise    the control plane's URL gateways send reports to, or null: the URL it listens on
 */
public record EtcdOptions(List<URI> endpoints, String prefix, String user, Path passwordFile, Path caFile,
                          Path certFile, Path keyFile, Duration leaseTtl, URI advertise) {

    /** The lease when none is configured. */
    public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(5);

    /** Checks every field; messages name the field and the expectation. */
    public EtcdOptions {
        if (endpoints == null || endpoints.isEmpty()) {
            throw new IllegalArgumentException("etcd.endpoints: missing (expected: at least one http:// or https:// URL)");
        }
        endpoints = List.copyOf(endpoints);
        for (URI u : endpoints) {
            if (u.getScheme() == null || !(u.getScheme().equals("http") || u.getScheme().equals("https"))
                    || u.getHost() == null) {
                throw new IllegalArgumentException("etcd.endpoints: " + u + " (expected: http://host:port or https://host:port)");
            }
        }
        if (prefix == null || !prefix.startsWith("/") || prefix.length() < 2 || prefix.endsWith("/")) {
            throw new IllegalArgumentException("etcd.prefix: " + prefix + " (expected: /name, not ending in /)");
        }
        if (user != null && passwordFile == null) {
            throw new IllegalArgumentException("etcd.password_file: missing (expected: a file with the password of user "
                    + user + ")");
        }
        if (user == null && passwordFile != null) {
            throw new IllegalArgumentException("etcd.user: missing (expected: the user of etcd.password_file)");
        }
        if ((certFile == null) != (keyFile == null)) {
            throw new IllegalArgumentException("etcd.cert_file, etcd.key_file: only one set (expected: both or neither)");
        }
        if (leaseTtl == null || leaseTtl.compareTo(Duration.ofSeconds(2)) < 0) {
            throw new IllegalArgumentException("etcd.lease_ttl: " + leaseTtl + " (expected: ≥ 2s)");
        }
    }

    /** {@code endpoints} with every other field at its default: prefix {@code /sextant}, no authentication, 5 s lease. */
    public static EtcdOptions of(List<URI> endpoints) {
        return new EtcdOptions(endpoints, "/sextant", null, null, null, null, null, DEFAULT_LEASE_TTL, null);
    }

    /** The same with another prefix. */
    public EtcdOptions withPrefix(String newPrefix) {
        return new EtcdOptions(endpoints, newPrefix, user, passwordFile, caFile, certFile, keyFile, leaseTtl, advertise);
    }

    /** The same with another lease. */
    public EtcdOptions withLeaseTtl(Duration ttl) {
        return new EtcdOptions(endpoints, prefix, user, passwordFile, caFile, certFile, keyFile, ttl, advertise);
    }
}
