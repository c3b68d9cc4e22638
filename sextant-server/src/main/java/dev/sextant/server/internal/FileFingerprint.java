package dev.sextant.server.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * What a watched file holds, as the SHA-256 of its bytes: how the control plane tells that its topology or its
 * credentials file changed (a modification time can stay the same across an edit, or change without one).
 */
public final class FileFingerprint {
    private FileFingerprint() {
    }

    /**
     * The hex SHA-256 of {@code file}'s bytes.
     *
     * @throws IOException the file cannot be read
     */
    public static String of(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }
}
