package dev.sextant.app;

import dev.sextant.server.tenants.ApiKeys;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code sextant hash-key}: an API key as the tenants file keeps it. The key is read from standard input, never from
 * the command line (which other users of the machine can see in the process list, and shells keep in history).
 */
@Command(name = "hash-key", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = {"Print the sha256: form of API keys for a tenants file (docs/tenants.md): one key per line of"
                + " standard input, one hash per line of output.",
                "With --new: make a random key and print it, then its hash."})
final class HashKeyCommand implements Callable<Integer> {
    private final PrintWriter out;

    @Option(names = "--new", description = "Make a new random key (sk-sx- and 64 hex digits) instead of reading keys.")
    boolean generate;

    HashKeyCommand(PrintWriter out) {
        this.out = out;
    }

    @Override
    public Integer call() throws Exception {
        if (generate) {
            String key = ApiKeys.generate();
            out.println(key);
            out.println(ApiKeys.hash(key));
            out.flush();
            return 0;
        }
        int n = hashes(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)), out);
        out.flush();
        if (n == 0) {
            throw new UsageException("no key on standard input (expected: one key per line, e.g."
                    + " `printf '%s\\n' \"$KEY\" | sextant hash-key`)");
        }
        return 0;
    }

    /**
     * Longest line read, characters (4 KiB): a generated key is 70, a provider's a few hundred at most; a longer line
     * ({@code hash-key </dev/zero}, a file piped by mistake) is no key, and is refused before it fills the heap.
     */
    static final int MAX_LINE_CHARS = 4096;

    /**
     * Prints the hash of each key of {@code in}, one a line (blank lines and surrounding whitespace ignored); returns
     * how many.
     *
     * @throws UsageException a line is longer than {@link #MAX_LINE_CHARS}, named by its number
     */
    static int hashes(Reader in, PrintWriter out) throws IOException {
        int n = 0;
        int lineNumber = 1;
        StringBuilder line = new StringBuilder();
        for (int c = in.read(); ; c = in.read()) {
            if (c == -1 || c == '\n') {
                String key = line.toString().strip();
                if (!key.isEmpty()) {
                    out.println(ApiKeys.hash(key));
                    n++;
                }
                if (c == -1) {
                    return n;
                }
                line.setLength(0);
                lineNumber++;
            } else if (line.length() == MAX_LINE_CHARS) {
                throw new UsageException("line " + lineNumber + ": longer than " + MAX_LINE_CHARS
                        + " characters (expected: one key per line)");
            } else {
                line.append((char) c);
            }
        }
    }
}
