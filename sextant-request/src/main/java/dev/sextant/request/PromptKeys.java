package dev.sextant.request;

/**
 * Derives a keyless request's affinity from the structure of its prompt: a <em>conversation key</em> that
 * stays the same over the turns of one conversation, and a <em>prefix key</em> naming the part it shares with
 * other conversations (a system prompt, a template). The gateway feeds it while it parses the body; the simulator
 * feeds it the same way. One instance per request, reused after {@link #reset()}; not thread-safe.
 *
 * <p>The rule (docs/design.md §4, docs/request-path.md §1):
 * <ul>
 *   <li><b>Messages</b> (a chat's {@code messages}, a response's {@code instructions} and {@code input} items): the
 *   conversation's first turn is every message up to and including the first message of role {@code user}; it is
 *   sent again, unchanged, at the head of every later turn. The conversation key hashes it, each message as its
 *   role and content. The prefix key hashes the messages before that first user message (the system prompt,
 *   developer instructions, a response's {@code instructions}, which count as a first {@code system} message
 *   wherever they stand in the body); a request with none has no prefix key. Messages after the first user
 *   message are not read: their cost is nil however long the conversation grows.</li>
 *   <li><b>A raw prompt</b> (a completion's {@code prompt} text or token ids, an embedding's {@code input}): it
 *   carries no turn boundaries. The prefix key hashes its first {@value #RAW_WINDOW} units (characters, or token
 *   ids counting two each), the conversation key all of it.</li>
 * </ul>
 *
 * <p>Implementation note: the text hash reads UTF-16 code units four at a time into one 64-bit word and folds
 * each word with one multiply and one rotation, a multiply-rotate construction in the manner of wyhash and
 * MurmurHash; the sequence of message hashes is folded as a polynomial in an odd constant modulo 2^64 (so a
 * response's {@code instructions}, read after its {@code input}, can still be put first), and every result goes
 * through the SplitMix64 finalizer. Fixed constants, no seed: every gateway process derives the same keys. Not a
 * cryptographic hash: a client that collides with another's key only moves its own requests.
 */
public final class PromptKeys {
    /** Units of a raw prompt its prefix key covers: characters, or token ids (two units each). */
    public static final int RAW_WINDOW = 1024;

    private static final long M = 0x9FB21C651E98DF25L;
    private static final long POLY = 0xC2B2AE3D27D4EB4FL;
    private static final long SEED = 0x243F6A8885A308D3L;
    private static final long PREFIX_SALT = 0x13198A2E03707344L;
    private static final long TURN_SALT = 0xA4093822299F31D0L;
    private static final long RAW_SALT = 0x082EFA98EC4E6C89L;
    private static final long USER = Keys.of("user");
    private static final long SYSTEM = Keys.of("system");

    // the unit being hashed (a message's content or a raw prompt): running hash, pending word, units in it, length
    private long h;
    private long word;
    private int pending;
    private long units;
    private boolean skip;
    // messages
    private boolean messages;
    private boolean hasPrefix;
    private boolean sawUser;
    private long prefix;
    private long prefixPow;
    private long turn;
    private long turnPow;
    private long instructions;
    private boolean hasInstructions;
    // raw prompt
    private boolean raw;
    private long window;
    private boolean windowDone;

    public PromptKeys() {
        reset();
    }

    /** Forgets everything fed so far. */
    public PromptKeys reset() {
        startUnit();
        skip = false;
        messages = false;
        hasPrefix = false;
        sawUser = false;
        prefix = 0;
        prefixPow = 1;
        turn = 0;
        turnPow = 1;
        hasInstructions = false;
        raw = false;
        windowDone = false;
        return this;
    }

    // ------------------------------------------------------------------ messages

    /**
     * Starts a message; its content follows through {@link #text}, its role comes with {@link #endMessage}. A
     * message after the first user message is not read (its text calls return at once).
     */
    public void beginMessage() {
        startUnit();
        skip = sawUser;
    }

    /**
     * Ends the message begun last, of {@code role} (null or empty when it has none; a Responses input item passes
     * its {@code type} instead).
     */
    public void endMessage(CharSequence role) {
        if (skip) {
            return;
        }
        long r = role == null ? 0 : Keys.of(role);
        long m = Hashing.mix(finishUnit() ^ r);
        messages = true;
        turn = turn * POLY + m;
        turnPow *= POLY;
        if (r == USER) {
            sawUser = true;
        } else {
            hasPrefix = true;
            prefix = prefix * POLY + m;
            prefixPow *= POLY;
        }
    }

    /** A response's {@code instructions}: a {@code system} message before all the others. */
    public void instructions(CharSequence text) {
        startUnit();
        text(text);
        instructions = Hashing.mix(finishUnit() ^ SYSTEM);
        hasInstructions = true;
    }

    /** A response's {@code input} given as one string: a {@code user} message. */
    public void userMessage(CharSequence text) {
        beginMessage();
        text(text);
        endMessage("user");
    }

    // ------------------------------------------------------------------ raw prompts

    /** Starts, or continues, a raw prompt (text or token ids): no roles, no turns. */
    public void beginRaw() {
        if (!raw) {
            startUnit();
            raw = true;
            skip = false;
        }
    }

    /** A token id of a pre-tokenized raw prompt: two units. */
    public void token(long id) {
        unit((char) id);
        unit((char) (id >>> 16));
    }

    // ------------------------------------------------------------------ text

    /** Content text of the current message or raw prompt. */
    public void text(CharSequence s) {
        if (skip) {
            return;
        }
        int i = 0;
        int n = s.length();
        while (i < n && pending != 0) {
            unit(s.charAt(i++));
        }
        while (n - i >= 4) {
            int words = wordsNow((n - i) >>> 2);
            long hh = h;
            for (int w = 0; w < words; w++, i += 4) {
                hh = Long.rotateLeft((hh ^ (s.charAt(i) | (long) s.charAt(i + 1) << 16 | (long) s.charAt(i + 2) << 32
                        | (long) s.charAt(i + 3) << 48)) * M, 29);
            }
            folded(hh, words);
        }
        while (i < n) {
            unit(s.charAt(i++));
        }
    }

    /** Content text of the current message or raw prompt, read in place from {@code buf[off, off + len)}. */
    public void text(char[] buf, int off, int len) {
        if (skip) {
            return;
        }
        int i = off;
        int end = off + len;
        while (i < end && pending != 0) {
            unit(buf[i++]);
        }
        while (end - i >= 4) {
            int words = wordsNow((end - i) >>> 2);
            long hh = h;
            for (int w = 0; w < words; w++, i += 4) {
                hh = Long.rotateLeft((hh ^ (buf[i] | (long) buf[i + 1] << 16 | (long) buf[i + 2] << 32
                        | (long) buf[i + 3] << 48)) * M, 29);
            }
            folded(hh, words);
        }
        while (i < end) {
            unit(buf[i++]);
        }
    }

    // ------------------------------------------------------------------ results

    /** True when anything was fed that gives keys: a message, instructions or a non-empty raw prompt. */
    public boolean present() {
        return raw ? units > 0 || pending > 0 : messages || hasInstructions;
    }

    /**
     * The conversation key: the first turn's messages, or a raw prompt whole. Meaningful when {@link #present()}.
     * Never 0.
     */
    public long conversationKey() {
        if (raw) {
            return nonZero(Hashing.mix(rawHash() + TURN_SALT));
        }
        long t = hasInstructions ? instructions * turnPow + turn : turn;
        return nonZero(Hashing.mix(t ^ TURN_SALT));
    }

    /**
     * The prefix key: the messages before the first user message, or a raw prompt's first {@value #RAW_WINDOW}
     * units; 0 when there are none.
     */
    public long prefixKey() {
        if (raw) {
            return present() ? nonZero(windowDone ? window : rawHash()) : 0;
        }
        if (!hasPrefix && !hasInstructions) {
            return 0;
        }
        long p = hasInstructions ? instructions * prefixPow + prefix : prefix;
        return nonZero(Hashing.mix(p ^ PREFIX_SALT));
    }

    /** The keys, or null when nothing that gives keys was fed ({@link #present()} false). */
    public PromptKey result() {
        return present() ? new PromptKey(conversationKey(), prefixKey()) : null;
    }

    // ------------------------------------------------------------------ hashing

    private void startUnit() {
        h = SEED;
        word = 0;
        pending = 0;
        units = 0;
    }

    private void unit(char c) {
        word |= (long) c << (pending << 4);
        if (++pending == 4) {
            fold(word);
            word = 0;
            pending = 0;
        }
    }

    private void fold(long w) {
        folded(Long.rotateLeft((h ^ w) * M, 29), 1);
    }

    /** Of {@code available} whole words, how many to fold before a raw prompt's window must be recorded. */
    private int wordsNow(int available) {
        return raw && !windowDone ? (int) Math.min(available, (RAW_WINDOW - units) >>> 2) : available;
    }

    /** {@code words} words were folded into the hash, now {@code hh}: records a raw prompt's window when reached. */
    private void folded(long hh, int words) {
        h = hh;
        units += 4L * words;
        if (raw && !windowDone && units >= RAW_WINDOW) {
            window = nonZero(Hashing.mix(h ^ units ^ RAW_SALT));
            windowDone = true;
        }
    }

    private long finishUnit() {
        long u = units + pending;
        return Hashing.mix(Long.rotateLeft((h ^ word) * M, 29) ^ u);
    }

    private long rawHash() {
        return nonZero(Hashing.mix(Long.rotateLeft((h ^ word) * M, 29) ^ (units + pending) ^ RAW_SALT));
    }

    private static long nonZero(long k) {
        return k == 0 ? 1 : k;
    }
}
