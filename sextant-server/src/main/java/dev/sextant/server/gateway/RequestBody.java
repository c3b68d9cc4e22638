package dev.sextant.server.gateway;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.sextant.server.internal.Http;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import java.io.IOException;

/**
 * The body fields that classify a request, read from the JSON without copying the body: the parser reads the
 * request's buffer in place; the buffer itself is forwarded to the engine untouched.
 *
 * @param model          {@code model}
 * @param stream         {@code stream}, false when absent
 * @param promptCacheKey {@code prompt_cache_key} or null
 * @param user           {@code user} or null
 * @param promptText     leading prompt text (messages' contents in order, or {@code prompt}/{@code input}), at most
 *                       1,024 characters
 */
record RequestBody(String model, boolean stream, String promptCacheKey, String user, String promptText) {
    static final int PROMPT_CHARS = 1024;

    /** Thrown for a body the gateway refuses with 400; the message names the field. */
    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;

        Invalid(String message) {
            super(message, null, false, false);
        }
    }

    static RequestBody parse(ByteBuf content) throws Invalid {
        JsonNode root;
        try (ByteBufInputStream in = new ByteBufInputStream(content.duplicate())) {
            root = Http.JSON.readTree((java.io.InputStream) in);
        } catch (JsonProcessingException e) {
            throw new Invalid("malformed JSON body: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new Invalid("unreadable body: " + e.getMessage());
        }
        if (root == null || root.isMissingNode()) {
            throw new Invalid("empty body (expected: a JSON object)");
        }
        if (!root.isObject()) {
            throw new Invalid("body: a JSON " + root.getNodeType().name().toLowerCase() + " (expected: a JSON object)");
        }
        JsonNode model = root.get("model");
        if (model == null || model.isNull()) {
            throw new Invalid("model: missing (expected: a model id)");
        }
        if (!model.isTextual() || model.asText().isBlank()) {
            throw new Invalid("model: " + model + " (expected: a non-empty string)");
        }
        JsonNode stream = root.get("stream");
        if (stream != null && !stream.isNull() && !stream.isBoolean()) {
            throw new Invalid("stream: " + stream + " (expected: true or false)");
        }
        StringBuilder prompt = new StringBuilder();
        JsonNode messages = root.get("messages");
        if (messages != null && !messages.isNull()) {
            if (!messages.isArray()) {
                throw new Invalid("messages: " + messages.getNodeType().name().toLowerCase() + " (expected: an array)");
            }
            for (JsonNode m : messages) {
                if (!m.isObject()) {
                    throw new Invalid("messages: an element is not an object");
                }
                appendText(prompt, m.get("content"));
                if (prompt.length() >= PROMPT_CHARS) {
                    break;
                }
            }
        }
        if (prompt.length() == 0) {
            appendText(prompt, root.get("prompt"));
        }
        if (prompt.length() == 0) {
            appendText(prompt, root.get("input"));
        }
        String text = prompt.length() > PROMPT_CHARS ? prompt.substring(0, PROMPT_CHARS) : prompt.toString();
        return new RequestBody(model.asText(), stream != null && stream.asBoolean(),
                optionalString(root, "prompt_cache_key"), optionalString(root, "user"), text.isEmpty() ? null : text);
    }

    private static String optionalString(JsonNode root, String field) throws Invalid {
        JsonNode n = root.get(field);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isTextual()) {
            throw new Invalid(field + ": " + n + " (expected: a string)");
        }
        return n.asText();
    }

    private static void appendText(StringBuilder out, JsonNode content) {
        if (content == null || out.length() >= PROMPT_CHARS) {
            return;
        }
        if (content.isTextual()) {
            out.append(content.asText(), 0, Math.min(content.asText().length(), PROMPT_CHARS - out.length()));
        } else if (content.isArray()) {
            for (JsonNode part : content) {
                if (part.isTextual()) {
                    appendText(out, part);
                } else if (part.isObject()) {
                    appendText(out, part.get("text"));
                }
            }
        }
    }
}
