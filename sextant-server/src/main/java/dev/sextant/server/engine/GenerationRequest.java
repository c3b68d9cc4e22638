package dev.sextant.server.engine;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Sha256;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * A validated {@code /v1/chat/completions}, {@code /v1/completions} or {@code /v1/responses} body, reduced to what
 * the latency model needs.
 *
 * @param api             which of the three APIs the request came by
 * @param model           requested model id
 * @param stream          answer as server-sent events
 * @param includeUsage    {@code stream_options.include_usage}: end the stream with a usage chunk (chat and text
 *                        completions; a Responses stream always ends with its usage)
 * @param maxTokens       output tokens to produce per choice, ≥ 1
 * @param maxTokensGiven  whether the request set them (then the finish reason is {@code length})
 * @param prompts         the prompts, one unless a completion's {@code prompt} is a batch (a list of strings, or of
 *                        token-id lists), each answered by {@code n} choices
 * @param n               choices per prompt, {@code n} (chat and text completions; 1 for a response), 1 to
 *                        {@value #MAX_N}
 * @param priority        {@code priority}, 0 when absent: with priority scheduling, lower values are admitted first
 */
record GenerationRequest(Api api, String model, boolean stream, boolean includeUsage, int maxTokens,
                         boolean maxTokensGiven, List<Prompt> prompts, int n, int priority) {
    /** The largest {@code n}, as OpenAI's API bounds it. */
    static final int MAX_N = 128;

    /**
     * One prompt of a request.
     *
     * @param tokens          its length in tokens (about 4 characters each, or its token ids counted), ≥ 1
     * @param conversationKey the prefix-cache key: {@code prompt_cache_key}, else {@code user}, else a hash of the
     *                        leading prompt text
     */
    record Prompt(int tokens, String conversationKey) {
    }

    GenerationRequest {
        prompts = List.copyOf(prompts);
    }

    /** Prompt tokens of the request, each prompt counted once however many choices it has (OpenAI's usage). */
    int promptTokens() {
        return prompts.stream().mapToInt(Prompt::tokens).sum();
    }

    /** The choices the answer carries: {@code n} per prompt, choice {@code i·n + j} the j-th of prompt i. */
    int choices() {
        return prompts.size() * n;
    }

    /** The prompt that choice {@code choice} answers. */
    Prompt promptOf(int choice) {
        return prompts.get(choice / n);
    }

    /** Characters of the prompt's beginning that identify a conversation without an explicit key. */
    static final int LEADING_CHARS = 256;

    /** The OpenAI APIs that generate text. */
    enum Api { CHAT, COMPLETIONS, RESPONSES }

    /** True for chat completions. */
    boolean chat() {
        return api == Api.CHAT;
    }

    /**
     * @param byPriority whether the engine schedules by priority; without it a non-zero {@code priority} is refused
     *                   (vLLM: "Priority scheduling is not enabled")
     */
    static GenerationRequest parse(JsonNode body, Api api, int defaultMaxTokens, List<String> models,
                                   boolean byPriority) {
        if (body == null || !body.isObject()) {
            throw OpenAiErrors.badRequest("The request body must be a JSON object.");
        }
        String model = EngineHttpHandler.model(body, models);
        List<StringBuilder> texts = new ArrayList<>(); // each prompt's text, or its token ids written out
        List<Integer> tokenIds = new ArrayList<>();    // a pre-tokenized prompt's length, known exactly; else 0
        if (api == Api.COMPLETIONS) {
            completionPrompts(body.get("prompt"), texts, tokenIds);
        } else {
            StringBuilder prompt = new StringBuilder();
            if (api == Api.CHAT) {
                chatPrompt(body, prompt);
            } else {
                responsesPrompt(body, prompt);
            }
            texts.add(prompt);
            tokenIds.add(0);
        }
        String maxName = api == Api.RESPONSES ? "max_output_tokens"
                : body.hasNonNull("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
        JsonNode max = body.get(maxName);
        boolean given = max != null && !max.isNull();
        if (given && (!max.canConvertToInt() || !max.isIntegralNumber() || max.asInt() < 1)) {
            throw OpenAiErrors.badRequest("'" + (api == Api.RESPONSES ? maxName : "max_tokens")
                    + "' must be an integer >= 1.");
        }
        JsonNode stream = body.get("stream");
        if (stream != null && !stream.isNull() && !stream.isBoolean()) {
            throw OpenAiErrors.badRequest("'stream' must be a boolean.");
        }
        JsonNode priority = body.get("priority");
        if (priority != null && !priority.isNull() && (!priority.isIntegralNumber() || !priority.canConvertToInt())) {
            throw OpenAiErrors.badRequest("'priority' must be an integer.");
        }
        int p = priority == null || priority.isNull() ? 0 : priority.asInt();
        if (p != 0 && !byPriority) {
            throw OpenAiErrors.badRequest("Got priority " + p + " but priority scheduling is not enabled"
                    + " (start the engine with --scheduling-policy priority).");
        }
        int n = api == Api.RESPONSES ? 1 : count(body.get("n"));
        String key = textOrNull(body.get("prompt_cache_key"));
        if (key == null) {
            key = textOrNull(body.get("user"));
        }
        List<Prompt> prompts = new ArrayList<>();
        for (int i = 0; i < texts.size(); i++) {
            StringBuilder text = texts.get(i);
            prompts.add(new Prompt(tokenIds.get(i) > 0 ? tokenIds.get(i) : tokens(text), key != null ? key
                    : "prefix:" + sha256(text.substring(0, Math.min(LEADING_CHARS, text.length())))));
        }
        return new GenerationRequest(api, model, stream != null && stream.asBoolean(),
                body.path("stream_options").path("include_usage").asBoolean(false),
                given ? max.asInt() : defaultMaxTokens, given, prompts, n, p);
    }

    /** {@code n}: absent or null is 1. */
    private static int count(JsonNode n) {
        if (n == null || n.isNull()) {
            return 1;
        }
        if (!n.isIntegralNumber() || !n.canConvertToInt() || n.asInt() < 1 || n.asInt() > MAX_N) {
            throw OpenAiErrors.badRequest("'n' must be an integer from 1 to " + MAX_N + ".");
        }
        return n.asInt();
    }

    /** A chat request's prompt: {@code role: content}, a line per message. */
    private static void chatPrompt(JsonNode body, StringBuilder prompt) {
        JsonNode messages = body.get("messages");
        if (messages == null || !messages.isArray() || messages.isEmpty()) {
            throw OpenAiErrors.badRequest("'messages' must be a non-empty array.");
        }
        for (JsonNode message : messages) {
            if (!message.isObject() || !message.path("role").isTextual()) {
                throw OpenAiErrors.badRequest("Each message must be an object with a string 'role'.");
            }
            appendMessage(prompt, message.get("role").asText(), message.get("content"));
        }
    }

    /**
     * A completion's {@code prompt}: a string, or token ids (vLLM takes them) as one prompt; a list of strings, or a
     * list of token-id lists, as a batch of prompts, each answered by its own choices as OpenAI and vLLM do.
     */
    private static void completionPrompts(JsonNode p, List<StringBuilder> texts, List<Integer> tokenIds) {
        if (p != null && p.isTextual()) {
            texts.add(new StringBuilder(p.asText()));
            tokenIds.add(0);
            return;
        }
        if (p != null && p.isArray() && !p.isEmpty()) {
            boolean strings = true;
            boolean lists = true;
            for (JsonNode item : p) {
                strings &= item.isTextual();
                lists &= item.isArray();
            }
            if (strings) {
                for (JsonNode item : p) {
                    texts.add(new StringBuilder(item.asText()));
                    tokenIds.add(0);
                }
                return;
            }
            for (JsonNode item : lists ? p : List.of(p)) {
                StringBuilder text = new StringBuilder();
                int ids = tokenIds(item, text);
                if (ids == 0) {
                    texts.clear();
                    break;
                }
                texts.add(text);
                tokenIds.add(ids);
            }
            if (!texts.isEmpty()) {
                return;
            }
        }
        throw OpenAiErrors.badRequest("'prompt' must be a string, a non-empty array of strings, or token ids"
                + " (a non-empty array of non-negative integers, or an array of such arrays).");
    }

    /**
     * A Responses API request's prompt as the chat prompt of the same conversation: {@code instructions} as a system
     * message, then each input item (a string {@code input} is one user message; an item without a {@code role}, such
     * as a tool call's output, counts its {@code output} or {@code arguments} text), so that a conversation costs the
     * same, and shares the same prefix cache, whichever of the two APIs carries it.
     */
    private static void responsesPrompt(JsonNode body, StringBuilder prompt) {
        JsonNode instructions = body.get("instructions");
        if (instructions != null && instructions.isTextual()) {
            appendMessage(prompt, "system", instructions);
        } else if (instructions != null && !instructions.isNull()) {
            throw OpenAiErrors.badRequest("'instructions' must be a string.");
        }
        JsonNode input = body.get("input");
        if (input != null && input.isTextual()) {
            appendMessage(prompt, "user", input);
        } else if (input != null && input.isArray() && !input.isEmpty()) {
            for (JsonNode item : input) {
                if (!item.isObject()) {
                    throw OpenAiErrors.badRequest("Each item of 'input' must be an object.");
                }
                if (item.path("role").isTextual()) {
                    appendMessage(prompt, item.get("role").asText(), item.get("content"));
                } else {
                    prompt.append(item.path("output").asText(item.path("arguments").asText(""))).append('\n');
                }
            }
        } else {
            throw OpenAiErrors.badRequest("'input' must be a string or a non-empty array of input items.");
        }
    }

    /** Appends {@code role: content} and a newline; content is a string or an array of parts with {@code text}. */
    private static void appendMessage(StringBuilder prompt, String role, JsonNode content) {
        prompt.append(role).append(": ");
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

    /**
     * The number of token ids in {@code p}, a non-empty list of them, appending each id and a space to
     * {@code prompt}; 0 when {@code p} is not such a list (or an id is not a non-negative integer).
     */
    private static int tokenIds(JsonNode p, StringBuilder prompt) {
        if (!p.isArray() || p.isEmpty()) {
            return 0;
        }
        for (JsonNode item : p) {
            if (!item.isIntegralNumber() || !item.canConvertToLong() || item.asLong() < 0) {
                return 0;
            }
            prompt.append(item.asLong()).append(' ');
        }
        return p.size();
    }

    /** Prompt tokens of a text, at about four characters a token, at least 1. */
    static int tokens(CharSequence text) {
        return Math.max(1, (text.length() + 3) / 4);
    }

    private static String textOrNull(JsonNode node) {
        return node != null && node.isTextual() && !node.asText().isEmpty() ? node.asText() : null;
    }

    static String sha256(String text) {
        return HexFormat.of().formatHex(Sha256.of(text.getBytes(StandardCharsets.UTF_8)), 0, 12);
    }
}
