package dev.sextant.server.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
        return HexFormat.of().formatHex(Sha256.of(Files.readAllBytes(file)));
    }
}
