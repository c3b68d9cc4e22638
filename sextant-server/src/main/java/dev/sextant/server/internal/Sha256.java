package dev.sextant.server.internal;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * SHA-256 as the files of secrets use it: the digest of some bytes, and the 64 hexadecimal digits a tenants or a
 * credentials file writes one as (a key or a token itself is never written in a file).
 */
public final class Sha256 {
    /** Hexadecimal digits in a written digest. */
    public static final int HEX_DIGITS = 64;

    private Sha256() {
    }

    /** A new SHA-256 {@link MessageDigest}. */
    public static MessageDigest newDigest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }

    /** The SHA-256 of {@code bytes}: 32 bytes. */
    public static byte[] of(byte[] bytes) {
        return newDigest().digest(bytes);
    }

    /**
     * The 32 bytes that {@code hex} writes, in either case; null when it is not exactly {@value #HEX_DIGITS}
     * hexadecimal digits (the caller names the field and what it expected).
     */
    public static byte[] parseHex(String hex) {
        if (hex.length() != HEX_DIGITS || !hex.chars().allMatch(HexFormat::isHexDigit)) { // ASCII digits only
            return null;
        }
        return HexFormat.of().parseHex(hex.toLowerCase(Locale.ROOT));
    }
}
