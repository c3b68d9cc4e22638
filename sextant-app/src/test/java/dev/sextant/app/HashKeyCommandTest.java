package dev.sextant.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.server.tenants.ApiKeys;
import java.io.PrintWriter;
import java.io.Reader;
import java.io.StringReader;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/** {@code sextant hash-key} reading keys from standard input. */
class HashKeyCommandTest {
    private final StringWriter out = new StringWriter();

    @Test
    void hashes_eachKeyOfALine_blankLinesAndWhitespaceIgnored() throws Exception {
        int n = HashKeyCommand.hashes(new StringReader(" sk-a \r\n\nsk-b"), new PrintWriter(out, true));

        assertThat(n).isEqualTo(2);
        assertThat(out.toString().lines()).containsExactly(ApiKeys.hash("sk-a"), ApiKeys.hash("sk-b"));
    }

    @Test
    void hashes_endlessLine_isRefusedNamingItsNumber() {
        Reader input = new Reader() { // a key, then a line that never ends, as /dev/zero would be
            private final String head = "sk-a\n";
            private long at;

            @Override
            public int read(char[] buf, int off, int len) {
                for (int i = 0; i < len; i++, at++) {
                    buf[off + i] = at < head.length() ? head.charAt((int) at) : 'e';
                }
                return len;
            }

            @Override
            public void close() {
            }
        };

        assertThatThrownBy(() -> HashKeyCommand.hashes(input, new PrintWriter(out, true)))
                .isInstanceOf(UsageException.class)
                .hasMessage("line 2: longer than 4096 characters (expected: one key per line)");
    }
}
