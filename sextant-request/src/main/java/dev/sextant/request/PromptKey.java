package dev.sextant.request;

/**
 * What {@link PromptKeys} derives from a prompt's structure.
 *
 * @param conversation the conversation key: stays the same over a conversation's turns; never 0
 * @param prefix       the prefix key: the part shared with other conversations (a system prompt, a template), or
 *                     0 when the prompt has none
 */
public record PromptKey(long conversation, long prefix) {
    public PromptKey {
        if (conversation == 0) {
            throw new IllegalArgumentException("conversation: 0 (expected: a key, never 0)");
        }
    }

    /**
     * The keys of a chat's messages, given as role, content, role, content, …: what the gateway derives from a body
     * with these {@code messages}.
     */
    public static PromptKey ofMessages(String... roleAndContent) {
        if (roleAndContent.length == 0 || roleAndContent.length % 2 != 0) {
            throw new IllegalArgumentException("roleAndContent: " + roleAndContent.length
                    + " strings (expected: role, content pairs, at least one)");
        }
        PromptKeys k = new PromptKeys();
        for (int i = 0; i < roleAndContent.length; i += 2) {
            k.beginMessage();
            k.text(roleAndContent[i + 1]);
            k.endMessage(roleAndContent[i]);
        }
        return k.result();
    }
}
