package dev.sextant.etcd;

import dev.sextant.config.SnapshotException;
import dev.sextant.config.SnapshotJson;
import dev.sextant.server.internal.Sha256;
import dev.sextant.snapshot.Snapshot;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.function.IntFunction;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;

/**
 * A gateway cluster's view as etcd holds it (docs/etcd.md, "Encoding"): the snapshot JSON, gzipped, after one header
 * line {@code sextant-view 1 <version> <published_ms> <chunks> <bytes> <sha256>}. etcd refuses a request over
 * 1.5 MiB by default; a view whose gzip is larger than {@code maxValueBytes} is cut into chunks, each its own key
 * and its own request, and the header (with no payload) says how many. The SHA-256 of the gzip bytes checks that the
 * chunks read belong to this header.
 */
final class ViewCodec {
    /** Largest value written in one request: well under etcd's default 1.5 MiB request limit. */
    static final int MAX_VALUE_BYTES = 1024 * 1024;
    private static final String MAGIC = "sextant-view 1 ";

    private ViewCodec() {
    }

    /** A view encoded: the value of its key, and its chunks (none when it fits in the value). */
    record Encoded(long version, byte[] value, List<byte[]> chunks, int jsonBytes, int gzipBytes) {
        /** Bytes written to etcd for it. */
        long bytes() {
            return value.length + chunks.stream().mapToLong(c -> c.length).sum();
        }
    }

    /** The header of a value read back. */
    record Header(long version, long publishedMs, int chunks, int bytes, String sha256, int payloadOffset) {
    }

    static Encoded encode(Snapshot view, long publishedMs, int maxValueBytes) {
        byte[] json = SnapshotJson.write(view).getBytes(StandardCharsets.UTF_8);
        byte[] gz = gzip(json);
        String sha = HexFormat.of().formatHex(Sha256.of(gz));
        int chunks = gz.length + 200 <= maxValueBytes ? 0 : (gz.length + maxValueBytes - 1) / maxValueBytes;
        byte[] head = (MAGIC + view.version() + " " + publishedMs + " " + chunks + " " + gz.length + " " + sha + "\n")
                .getBytes(StandardCharsets.US_ASCII);
        if (chunks == 0) {
            byte[] value = Arrays.copyOf(head, head.length + gz.length);
            System.arraycopy(gz, 0, value, head.length, gz.length);
            return new Encoded(view.version(), value, List.of(), json.length, gz.length);
        }
        List<byte[]> parts = new ArrayList<>(chunks);
        for (int i = 0; i < chunks; i++) {
            parts.add(Arrays.copyOfRange(gz, i * maxValueBytes, Math.min(gz.length, (i + 1) * maxValueBytes)));
        }
        return new Encoded(view.version(), head, List.copyOf(parts), json.length, gz.length);
    }

    /** The header of {@code value}; an {@link IllegalArgumentException} naming what is wrong when it is not one. */
    static Header header(byte[] value) {
        int nl = -1;
        for (int i = 0; i < Math.min(value.length, 256); i++) {
            if (value[i] == '\n') {
                nl = i;
                break;
            }
        }
        String line = nl < 0 ? "" : new String(value, 0, nl, StandardCharsets.US_ASCII);
        if (!line.startsWith(MAGIC)) {
            throw new IllegalArgumentException("not a Sextant view (expected: a first line starting '" + MAGIC.trim()
                    + "')");
        }
        String[] f = line.substring(MAGIC.length()).split(" ");
        if (f.length != 5) {
            throw new IllegalArgumentException("view header: '" + line + "' (expected: 5 fields after the magic)");
        }
        try {
            return new Header(Long.parseLong(f[0]), Long.parseLong(f[1]), Integer.parseInt(f[2]),
                    Integer.parseInt(f[3]), f[4], nl + 1);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("view header: '" + line + "' (expected: numbers)");
        }
    }

    /**
     * The view {@code value} holds, reading its chunks with {@code chunk} (index → bytes, null when missing).
     *
     * @throws IllegalArgumentException when the value or its chunks are incomplete or do not match the header
     * @throws SnapshotException        when the JSON is not a valid snapshot
     */
    static Snapshot decode(byte[] value, IntFunction<byte[]> chunk, String source) throws SnapshotException {
        Header h = header(value);
        byte[] gz;
        if (h.chunks() == 0) {
            gz = Arrays.copyOfRange(value, h.payloadOffset(), value.length);
        } else {
            ByteArrayOutputStream all = new ByteArrayOutputStream(h.bytes());
            for (int i = 0; i < h.chunks(); i++) {
                byte[] c = chunk.apply(i);
                if (c == null) {
                    throw new IllegalArgumentException("view " + h.version() + ": chunk " + i + " of " + h.chunks()
                            + " missing (superseded while read?)");
                }
                all.writeBytes(c);
            }
            gz = all.toByteArray();
        }
        if (gz.length != h.bytes() || !HexFormat.of().formatHex(Sha256.of(gz)).equals(h.sha256())) {
            throw new IllegalArgumentException("view " + h.version() + ": " + gz.length + " bytes whose SHA-256 does"
                    + " not match the header's (" + h.bytes() + " bytes)");
        }
        return SnapshotJson.read(new String(gunzip(gz), StandardCharsets.UTF_8), source);
    }

    static byte[] gzip(byte[] bytes) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(bytes.length / 8 + 64);
        try (GZIPOutputStream z = new GZIPOutputStream(out, 64 * 1024)) {
            z.write(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // in memory: cannot happen
        }
        return out.toByteArray();
    }

    static byte[] gunzip(byte[] gz) {
        try (GZIPInputStream z = new GZIPInputStream(new ByteArrayInputStream(gz), 64 * 1024)) {
            return z.readAllBytes();
        } catch (IOException e) {
            throw new IllegalArgumentException("view: not valid gzip (" + e.getMessage() + ")");
        }
    }
}
