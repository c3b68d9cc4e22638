package dev.sextant.app;

import dev.sextant.server.tenants.ApiKeys;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
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
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int n = 0;
        for (String line; (line = in.readLine()) != null; ) {
            String key = line.strip();
            if (!key.isEmpty()) {
                out.println(ApiKeys.hash(key));
                n++;
            }
        }
        out.flush();
        if (n == 0) {
            throw new UsageException("hash-key: no key on standard input (expected: one key per line, e.g."
                    + " `printf '%s\\n' \"$KEY\" | sextant hash-key`)");
        }
        return 0;
    }
}
