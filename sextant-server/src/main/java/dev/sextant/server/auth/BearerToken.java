package dev.sextant.server.auth;

import dev.sextant.config.BoundedFile;
import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigProblem;
import dev.sextant.server.internal.Sha256;
import dev.sextant.server.internal.WatchedFile;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.logging.Logger;

/**
 * The shared bearer token of the control plane's endpoints, fixed or read from a file that may change while the
 * servers run, so that a token is rotated without a restart.
 *
 * <p>A token file holds one token per line (blank lines and surrounding whitespace are ignored). A control plane
 * accepts every token in its file; a gateway sends the first one in its file. Rotation: add the new token as a
 * second line of the control plane's file, put it in the gateways' files, then remove the old line. Each file is
 * looked at again at most once every {@link #RECHECK} (its content's fingerprint), when a token is next needed; a
 * file that became unreadable or empty is an error logged at SEVERE, and the tokens read before stay in force.
 *
 * <p>Tokens are compared by their SHA-256 digests with {@link MessageDigest#isEqual}, so the time taken depends neither
 * on where a given token differs nor on the expected token's length. {@link #toString()} never shows a token.
 */
public final class BearerToken {
    private static final Logger LOG = Logger.getLogger(BearerToken.class.getName());
    /**
     * Largest token file, bytes (1 MiB): a token is tens of bytes, so this holds thousands of them, and a file that is
     * no token file ({@code /dev/zero}, a disk image named by mistake) is refused, not read into the heap.
     */
    public static final int MAX_FILE_BYTES = 1 << 20;
    /** How often a token file is looked at again, at most. */
    public static final Duration RECHECK = Duration.ofSeconds(1);

    /** The tokens of a fixed token; null for a file. */
    private final Tokens fixed;
    /** The token file; null for a fixed token. */
    private final WatchedFile<Tokens> file;
    private final LongSupplier nanos;
    private final long recheckNanos;
    private long checkedAt;

    /** The tokens of one reading: their text and digests. */
    private record Tokens(List<String> text, List<byte[]> digests) {
    }

    private BearerToken(Tokens fixed, WatchedFile<Tokens> file, LongSupplier nanos, Duration recheck) {
        this.fixed = fixed;
        this.file = file;
        this.nanos = nanos;
        this.recheckNanos = recheck.toNanos();
        this.checkedAt = nanos.getAsLong();
    }

    /** A fixed token (from the environment, or a test). */
    public static BearerToken of(String token) {
        List<String> all = parse(token == null ? "" : token);
        if (all.size() != 1) {
            throw new IllegalArgumentException("token: " + (all.isEmpty() ? "empty" : "more than one line")
                    + " (expected: one bearer token)");
        }
        return new BearerToken(tokens(all), null, System::nanoTime, RECHECK);
    }

    /**
     * The tokens in {@code file}, read now and again when it changes.
     *
     * @throws IOException              the file cannot be read, or holds more than {@link #MAX_FILE_BYTES}
     * @throws IllegalArgumentException it holds no token
     */
    public static BearerToken file(Path file) throws IOException {
        return file(file, System::nanoTime, RECHECK);
    }

    /** As {@link #file(Path)}, on the clock {@code nanos}, looking again at most every {@code recheck}. */
    static BearerToken file(Path file, LongSupplier nanos, Duration recheck) throws IOException {
        try {
            return new BearerToken(null, WatchedFile.read(file, MAX_FILE_BYTES, BearerToken::read), nanos, recheck);
        } catch (ConfigException e) {
            throw new IllegalArgumentException(e.problems().get(0).message(), e);
        }
    }

    /** The token a client sends: the first of the file. */
    public String current() {
        return refreshed().text.get(0);
    }

    /** Whether an {@code Authorization} header value carries one of the tokens: {@code Bearer <token>}. */
    public boolean accepts(String authorization) {
        String presented = presented(authorization);
        if (presented == null) {
            return false;
        }
        byte[] given = Sha256.of(presented.getBytes(StandardCharsets.UTF_8));
        boolean ok = false;
        for (byte[] expected : refreshed().digests) {
            ok |= MessageDigest.isEqual(given, expected); // every token compared: the count is no secret
        }
        return ok;
    }

    /**
     * The token an {@code Authorization} header value presents: what follows {@code Bearer } (the scheme in any case,
     * as RFC 9110 §11.1 has it), without surrounding whitespace; null for no header, another scheme or an empty token.
     * Every listener that takes a bearer token reads it through here, so that all of them accept the same headers.
     */
    public static String presented(String authorization) {
        if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return null;
        }
        String token = authorization.substring(7).trim();
        return token.isEmpty() ? null : token;
    }

    /**
     * The {@code Authorization} value a request speaks with: of its repeated headers, the first that presents a bearer
     * token (else the first, or null when there is none), and that token (null when none does). {@code ambiguous} when they present different tokens: who
     * the request speaks for would then be whichever header a proxy put first, so the control plane and the emulator's
     * admin endpoint refuse it, as the gateway refuses a tenant's ambiguous keys.
     */
    public record Presented(String authorization, String token, boolean ambiguous) {
        /** Different tokens presented. */
        static final Presented AMBIGUOUS = new Presented(null, null, true);

        /** What a request's {@code Authorization} values, in the order received, present. */
        public static Presented of(Iterable<String> values) {
            String first = null;
            String token = null;
            String with = null;
            for (String a : values) {
                first = first == null ? a : first;
                String t = BearerToken.presented(a);
                if (t != null && token != null && !t.equals(token)) {
                    return AMBIGUOUS;
                }
                if (t != null && token == null) {
                    token = t;
                    with = a;
                }
            }
            return new Presented(with != null ? with : first, token, false);
        }
    }

    @Override
    public String toString() {
        return file == null ? "(redacted)" : "(redacted, from " + file.file() + ")";
    }

    private Tokens refreshed() {
        if (file == null) {
            return fixed;
        }
        synchronized (this) {
            long now = nanos.getAsLong();
            if (now - checkedAt >= recheckNanos) {
                checkedAt = now;
                switch (file.refresh()) {
                    case RELOADED -> {
                        int n = file.current().text.size();
                        LOG.info("bearer tokens reloaded from " + file.file() + " (" + n + " token" + (n == 1 ? "" : "s")
                                + ")");
                    }
                    case REFUSED -> LOG.severe("TOKEN FILE " + file.error() + "; the tokens read before stay in force");
                    case UNCHANGED, RESTORED -> { }
                }
            }
        }
        return file.current();
    }

    private static Tokens read(Path file) throws IOException, ConfigException {
        List<String> all = parse(BoundedFile.readString(file, MAX_FILE_BYTES));
        if (all.isEmpty()) {
            throw new ConfigException(List.of(new ConfigProblem(file.toString(), 0, "",
                    "holds no token (expected: one bearer token per line)")));
        }
        return tokens(all);
    }

    private static Tokens tokens(List<String> text) {
        List<byte[]> digests = new ArrayList<>(text.size());
        for (String t : text) {
            digests.add(Sha256.of(t.getBytes(StandardCharsets.UTF_8)));
        }
        return new Tokens(List.copyOf(text), List.copyOf(digests));
    }

    private static List<String> parse(String content) {
        List<String> out = new ArrayList<>();
        for (String line : content.split("\r\n|\r|\n")) {
            String t = line.strip();
            if (!t.isEmpty()) {
                out.add(t);
            }
        }
        return out;
    }
}
