package dev.sextant.server.tenants;

import dev.sextant.server.internal.Sha256;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * API keys as the tenants file keeps them: never the key, only {@code sha256:<64 hex digits>}, the SHA-256 of its
 * UTF-8 bytes. A presented key is hashed once and looked up by its digest, so no key is compared byte by byte (a
 * lookup's time says nothing about how close a guess came) and a leaked tenants file gives no key away.
 */
public final class ApiKeys {
    /** How a hashed key starts in the tenants file. */
    public static final String PREFIX = "sha256:";
    private static final ThreadLocal<MessageDigest> SHA256 = ThreadLocal.withInitial(Sha256::newDigest);
    private static final SecureRandom RANDOM = new SecureRandom();

    private ApiKeys() {
    }

    /** {@code key} as the tenants file keeps it: {@code sha256:<hex>}. */
    public static String hash(String key) {
        return PREFIX + HexFormat.of().formatHex(SHA256.get().digest(key.getBytes(StandardCharsets.UTF_8)));
    }

    /** A new random key: {@code sk-sx-} and 32 bytes of {@link SecureRandom} as 64 hex digits. */
    public static String generate() {
        byte[] b = new byte[32];
        RANDOM.nextBytes(b);
        return "sk-sx-" + HexFormat.of().formatHex(b);
    }

    /** The digest of a presented key. */
    static Digest digest(String key) {
        return Digest.of(SHA256.get().digest(key.getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * The digest a {@code sha256:<hex>} entry names.
     *
     * @throws IllegalArgumentException naming what is wrong, never showing the value (it might be a key pasted by
     *                                  mistake)
     */
    static Digest parse(String entry) {
        if (!entry.startsWith(PREFIX)) {
            throw new IllegalArgumentException("not a hashed key (expected: sha256: and 64 hex digits, as "
                    + "`sextant hash-key` prints; a key itself is never written in the file)");
        }
        String hex = entry.substring(PREFIX.length());
        byte[] digest = Sha256.parseHex(hex);
        if (digest == null) {
            throw new IllegalArgumentException("sha256: followed by " + hex.length() + " characters (expected: 64 hex"
                    + " digits)");
        }
        return Digest.of(digest);
    }

    /** A SHA-256 digest as four longs: a map key with a cheap hash and equality. */
    record Digest(long a, long b, long c, long d) {
        static Digest of(byte[] sha256) {
            ByteBuffer bb = ByteBuffer.wrap(sha256);
            return new Digest(bb.getLong(), bb.getLong(), bb.getLong(), bb.getLong());
        }
    }
}
