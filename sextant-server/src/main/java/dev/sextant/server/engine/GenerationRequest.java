package dev.sextant.server.engine;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * A validated {@code /v1/chat/completions} or {@code /v1/completions} body, reduced to what the latency model
 * needs.
 *
 * @param chat            true for chat completions, false for text completions
 * @param model           requested model id
 * @param stream          answer as server-sent events
 * @param includeUsage    {@code stream_options.include_usage}: end the stream with a usage chunk
 * @param maxTokens       output tokens to produce, ≥ 1
 * @param maxTokensGiven  whether the request set them (then the finish reason is {@code length})
 * @param promptTokens    prompt length in tokens (about 4 characters each), ≥ 1
 * @param conversationKey the prefix-cache key: {@code prompt_cache_key}, else {@code user}, else a hash of the
 *                        leading prompt text
 */
record GenerationRequest(boolean chat, String model, boolean stream, boolean includeUsage, int maxTokens,
                         boolean maxTokensGiven, int promptTokens, String conversationKey) {
    /** Characters of the prompt's beginning that identify a conversation without an explicit key. */
    static final int LEADING_CHARS = 256;

    static GenerationRequest parse(JsonNode body, boolean chat, int defaultMaxTokens, List<String> models) {
        if (body == null || !body.isObject()) {
            throw OpenAiErrors.badRequest("The request body must be a JSON object.");
        }
        String model = EngineHttpHandler.model(body, models);
        StringBuilder prompt = new StringBuilder();
        int tokenIds = 0; // a pre-tokenized prompt's length, known exactly
        if (chat) {
            JsonNode messages = body.get("messages");
            if (messages == null || !messages.isArray() || messages.isEmpty()) {
                throw OpenAiErrors.badRequest("'messages' must be a non-empty array.");
            }
            for (JsonNode message : messages) {
                if (!message.isObject() || !message.path("role").isTextual()) {
                    throw OpenAiErrors.badRequest("Each message must be an object with a string 'role'.");
                }
                prompt.append(message.get("role").asText()).append(": ");
                JsonNode content = message.get("content");
                if (content != null && content.isTextual()) {
                    prompt.append(content.asText());
                } else if (content != null && content.isArray()) {
                    for (JsonNode part : content) {
                        prompt.append(part.path("text").asText(""));
                    }
                } else if (content != null && !content.isNull()) {
                    throw OpenAiErrors.badRequest("A message's 'content' must be a string or an array of parts.");
                }
                prompt.append('\n');
            }
        } else {
            JsonNode p = body.get("prompt");
            if (p != null && p.isTextual()) {
                prompt.append(p.asText());
            } else if (p != null && p.isArray() && !p.isEmpty() && p.get(0).isTextual()) {
                for (JsonNode part : p) {
                    prompt.append(part.asText());
                }
            } else if (p != null && p.isArray() && !p.isEmpty() && (tokenIds = tokenIds(p, prompt)) > 0) {
                // token ids (vLLM takes them), one list or a batch of lists: counted, not estimated
            } else {
                throw OpenAiErrors.badRequest("'prompt' must be a string, a non-empty array of strings, or token ids"
                        + " (a non-empty array of non-negative integers, or an array of such arrays).");
            }
        }
        JsonNode max = body.hasNonNull("max_completion_tokens") ? body.get("max_completion_tokens") : body.get("max_tokens");
        boolean given = max != null && !max.isNull();
        if (given && (!max.canConvertToInt() || !max.isIntegralNumber() || max.asInt() < 1)) {
            throw OpenAiErrors.badRequest("'max_tokens' must be an integer >= 1.");
        }
        JsonNode stream = body.get("stream");
        if (stream != null && !stream.isNull() && !stream.isBoolean()) {
            throw OpenAiErrors.badRequest("'stream' must be a boolean.");
        }
        String key = textOrNull(body.get("prompt_cache_key"));
        if (key == null) {
            key = textOrNull(body.get("user"));
        }
        if (key == null) {
            key = "prefix:" + sha256(prompt.substring(0, Math.min(LEADING_CHARS, prompt.length())));
        }
        return new GenerationRequest(chat, model, stream != null && stream.asBoolean(),
                body.path("stream_options").path("include_usage").asBoolean(false),
                given ? max.asInt() : defaultMaxTokens, given, tokenIds > 0 ? tokenIds : tokens(prompt), key);
    }

    /**
     * The number of token ids in {@code p}, a list of them or a list of such lists, appending each id and a space
     * to {@code prompt}; 0 when {@code p} is neither (or a list in it is empty, or an id is not a non-negative
     * integer).
     */
    private static int tokenIds(JsonNode p, StringBuilder prompt) {
        int count = 0;
        boolean batch = p.get(0).isArray();
        for (JsonNode item : p) {
            if (batch) {
                int inner = item.isArray() && !item.isEmpty() ? tokenIds(item, prompt) : 0;
                if (inner == 0 || item.get(0).isArray()) {
                    return 0;
                }
                count += inner;
            } else if (item.isIntegralNumber() && item.canConvertToLong() && item.asLong() >= 0) {
                prompt.append(item.asLong()).append(' ');
                count++;
            } else {
                return 0;
            }
        }
        return count;
    }

    /** Prompt tokens of a text, at about four characters a token, at least 1. */
    static int tokens(CharSequence text) {
        return Math.max(1, (text.length() + 3) / 4);
    }

    private static String textOrNull(JsonNode node) {
        return node != null && node.isTextual() && !node.asText().isEmpty() ? node.asText() : null;
    }

    static String sha256(String text) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 12);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }
}
