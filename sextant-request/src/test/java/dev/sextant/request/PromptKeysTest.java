package dev.sextant.request;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The keys {@link PromptKeys} derives from a prompt's structure: docs/request-path.md §1. */
class PromptKeysTest {
    static final String SYSTEM = "You are a support assistant for a bank. ".repeat(50);

    @Test
    void laterTurns_keepTheFirstTurnsKeys_evenWithAShortFirstMessage() {
        PromptKey turn1 = PromptKey.ofMessages("system", SYSTEM, "user", "Is my card blocked?");
        PromptKey turn2 = PromptKey.ofMessages("system", SYSTEM, "user", "Is my card blocked?",
                "assistant", "No, it is active.", "user", "Then why was it refused?");
        assertThat(turn2).isEqualTo(turn1);
        PromptKey bare1 = PromptKey.ofMessages("user", "hi");
        assertThat(PromptKey.ofMessages("user", "hi", "assistant", "hello", "user", "how are you?"))
                .isEqualTo(bare1);
    }

    @Test
    void conversationsSharingOnlyASystemPrompt_shareTheirPrefixKey_notTheirConversationKey() {
        PromptKey a = PromptKey.ofMessages("system", SYSTEM, "user", "Is my card blocked?");
        PromptKey b = PromptKey.ofMessages("system", SYSTEM, "user", "What is my balance?");
        assertThat(a.prefix()).isEqualTo(b.prefix()).isNotZero();
        assertThat(a.conversation()).isNotEqualTo(b.conversation());
        assertThat(PromptKey.ofMessages("system", SYSTEM + "!", "user", "Is my card blocked?").prefix())
                .isNotEqualTo(a.prefix());
    }

    @Test
    void noMessageBeforeTheFirstUserMessage_noPrefixKey() {
        assertThat(PromptKey.ofMessages("user", "hi").prefix()).isZero();
    }

    @Test
    void roleIsPartOfTheKey() {
        assertThat(PromptKey.ofMessages("system", "x", "user", "y"))
                .isNotEqualTo(PromptKey.ofMessages("user", "x", "user", "y"));
        // message boundaries count: the same characters split otherwise are another conversation
        assertThat(PromptKey.ofMessages("system", "ab", "user", "c").conversation())
                .isNotEqualTo(PromptKey.ofMessages("system", "a", "user", "bc").conversation());
    }

    @Test
    void contentInParts_inPlaceOrAsAString_givesTheSameKeys() {
        String content = "Is my card blocked? Ünïcödé and more text to cross several words.";
        PromptKeys parts = new PromptKeys();
        parts.beginMessage();
        for (int i = 0; i < content.length(); i += 7) {
            char[] buf = ("##" + content.substring(i, Math.min(content.length(), i + 7))).toCharArray();
            parts.text(buf, 2, buf.length - 2);
        }
        parts.endMessage("user");
        assertThat(parts.result()).isEqualTo(PromptKey.ofMessages("user", content));
    }

    @Test
    void responsesInstructions_actAsAFirstSystemMessage_whereverTheyStand() {
        PromptKeys r = new PromptKeys();
        r.userMessage("Is my card blocked?"); // input read before instructions in the body
        r.instructions(SYSTEM);
        assertThat(r.result()).isEqualTo(PromptKey.ofMessages("system", SYSTEM, "user", "Is my card blocked?"));
    }

    @Test
    void rawPrompt_prefixKeyIsTheLeadingWindow_conversationKeyTheWholePrompt() {
        String head = "t".repeat(PromptKeys.RAW_WINDOW);
        PromptKey a = raw(head + "first question");
        PromptKey b = raw(head + "another question");
        assertThat(a.prefix()).isEqualTo(b.prefix());
        assertThat(a.conversation()).isNotEqualTo(b.conversation());
        assertThat(raw("a" + head).prefix()).isNotEqualTo(raw("b" + head).prefix());
        assertThat(raw("short").prefix()).isNotEqualTo(raw("shorter").prefix());
    }

    @Test
    void tokenIds_keyByTheirValues() {
        PromptKeys a = new PromptKeys();
        a.beginRaw();
        for (int t = 0; t < 600; t++) {
            a.token(t);
        }
        PromptKeys b = new PromptKeys();
        b.beginRaw();
        for (int t = 0; t < 600; t++) {
            b.token(t == 599 ? 7 : t);
        }
        assertThat(a.prefixKey()).isEqualTo(b.prefixKey()); // the first 512 ids are the window
        assertThat(a.conversationKey()).isNotEqualTo(b.conversationKey());
    }

    @Test
    void nothingFed_noKeys_andReset_forgets() {
        PromptKeys k = new PromptKeys();
        assertThat(k.result()).isNull();
        k.userMessage("hi");
        assertThat(k.reset().result()).isNull();
    }

    static PromptKey raw(String s) {
        PromptKeys k = new PromptKeys();
        k.beginRaw();
        k.text(s);
        return k.result();
    }
}
