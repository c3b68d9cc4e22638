package dev.sextant.server.internal;

import dev.sextant.config.BoundedFile;
import java.io.IOException;
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
     * The hex SHA-256 of {@code file}'s bytes, of which no more than {@code maxBytes} are read, so that a file of any
     * kind ({@code /dev/zero}) is refused instead of filling the heap.
     *
     * @throws IOException the file cannot be read, or holds more than {@code maxBytes}
     *                     ({@link BoundedFile.TooLargeException})
     */
    public static String of(Path file, int maxBytes) throws IOException {
        return HexFormat.of().formatHex(Sha256.of(BoundedFile.read(file, maxBytes)));
    }
}
