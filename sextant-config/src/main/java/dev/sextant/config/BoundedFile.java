package dev.sextant.config;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads a whole file that may be of any size and of any kind: a regular file, a device ({@code /dev/zero}), a pipe
 * ({@code /dev/stdin}, a FIFO). No more than the limit and one byte is ever read, so that a file beyond the limit is
 * refused in its own words ({@code file of 17000000 bytes (expected: at most 16777216)}) instead of filling the heap:
 * the size of a regular file is known before, that of any other only by reading it.
 */
public final class BoundedFile {
    private BoundedFile() {
    }

    /** A file beyond the limit of its reader; its message says the size found and the limit. */
    public static final class TooLargeException extends IOException {
        private static final long serialVersionUID = 1L;

        TooLargeException(String message) {
            super(message);
        }
    }

    /**
     * The bytes of {@code file}, at most {@code limit} of them.
     *
     * @throws TooLargeException the file holds more than {@code limit} bytes
     * @throws IOException       it cannot be read
     */
    public static byte[] read(Path file, int limit) throws IOException {
        checkSize(file, limit); // a regular file beyond it is not opened: no byte of it is read
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file)) {
            bytes = in.readNBytes(limit + 1);
        }
        if (bytes.length > limit) { // a file that grew, or that is not regular: its size is not known
            throw tooLarge("more than " + limit + " bytes", limit);
        }
        return bytes;
    }

    /**
     * The text of {@code file}, UTF-8, at most {@code limit} bytes of it.
     *
     * @throws TooLargeException the file holds more than {@code limit} bytes
     * @throws IOException       it cannot be read, or is not UTF-8 ({@link java.nio.charset.CharacterCodingException})
     */
    public static String readString(Path file, int limit) throws IOException {
        return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(read(file, limit))).toString();
    }

    /**
     * Refuses {@code file} when it is a regular file of more than {@code limit} bytes; any other kind of file shows its
     * size only by being read.
     *
     * @throws TooLargeException it is larger ({@code file of 17000000 bytes (expected: at most 16777216)})
     * @throws IOException       its size cannot be read
     */
    public static void checkSize(Path file, long limit) throws IOException {
        if (Files.isRegularFile(file)) {
            long size = Files.size(file);
            if (size > limit) {
                throw tooLarge("file of " + size + " bytes", limit);
            }
        }
    }

    private static TooLargeException tooLarge(String found, long limit) {
        return new TooLargeException(found + " (expected: at most " + limit + ")");
    }
}
