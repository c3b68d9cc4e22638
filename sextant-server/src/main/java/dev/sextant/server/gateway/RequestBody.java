package dev.sextant.server.gateway;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.sextant.config.Json;
import dev.sextant.request.PromptKey;
import dev.sextant.request.PromptKeys;
import dev.sextant.server.internal.Http;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * The body fields that classify a request, read from the JSON without copying the body: a streaming parser reads
 * the request's buffer in place and skips every other field; the buffer itself is forwarded to the engine untouched.
 *
 * @param model          {@code model}
 * @param stream         {@code stream}, false when absent
 * @param promptCacheKey {@code prompt_cache_key} or null
 * @param user           {@code user} or null
 * @param prompt         the keys {@link PromptKeys} derives from the prompt's structure, or null when there is no
 *                       prompt: chat {@code messages} (each message's {@code role} and its {@code content}, a string or
 *                       parts' {@code text}); else {@code prompt}, raw text or token ids; else a response's
 *                       {@code instructions} (a first system message) and its {@code input}: a string is a user message,
 *                       items are messages (their {@code role}, else their {@code type}; their {@code content} and a
 *                       tool output's {@code output}), an array of strings or token ids (an embedding's batch) is raw
 * @param end            where the body's object closes: the offset of its last {@code '}'} from the buffer's reader
 *                       index, or -1 when it cannot be told (then nothing is added to the body)
 * @param maxTokens      the most output tokens it asks for: the largest integer among {@code max_tokens},
 *                       {@code max_completion_tokens} and {@code max_output_tokens}, or -1 when none is given (a
 *                       tenant's tokens-per-minute limit counts it; the engine checks the fields)
 */
record RequestBody(String model, boolean stream, String promptCacheKey, String user, PromptKey prompt, int end,
                   long maxTokens) {

    /** Thrown for a body the gateway refuses with 400; the message names the field, as {@link #param()} does. */
    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;
        private final String param;

        /** About the body as a whole (not JSON, not an object): no field to name. */
        Invalid(String message) {
            this(null, message);
        }

        private Invalid(String param, String message) {
            super(message, null, false, false);
            this.param = param;
        }

        /** About the body's field {@code field}: the message is {@code "<field>: <says>"}. */
        static Invalid field(String field, String says) {
            return new Invalid(field, field + ": " + says);
        }

        /** The body's field the error is about (OpenAI's {@code param}), or null when about the body as a whole. */
        String param() {
            return param;
        }
    }

    static RequestBody parse(ByteBuf content) throws Invalid {
        // a streaming read: only the fields that classify are looked at, everything else is skipped unparsed
        String model = null;
        boolean modelSeen = false;
        boolean stream = false;
        String promptCacheKey = null;
        String user = null;
        long maxTokens = -1;
        PromptKeys messages = new PromptKeys();
        PromptKeys prompt = new PromptKeys();
        PromptKeys response = new PromptKeys();
        int seen = 0; // the classifying fields read so far, one bit each (CLASSIFYING's order)
        int end;
        try (JsonParser p = Http.JSON.getFactory().createParser((InputStream) new ByteBufInputStream(content.duplicate()))) {
            JsonToken t = p.nextToken();
            if (t == null) {
                throw new Invalid("empty body (expected: a JSON object)");
            }
            if (t != JsonToken.START_OBJECT) {
                throw new Invalid("body: " + kind(t) + " (expected: a JSON object)");
            }
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                t = p.nextToken();
                seen = once(name, seen);
                switch (name) {
                    case "model" -> {
                        modelSeen = t != JsonToken.VALUE_NULL;
                        if (modelSeen && t != JsonToken.VALUE_STRING) {
                            throw Invalid.field("model", describe(p, t) + " (expected: a non-empty string)");
                        }
                        model = modelSeen ? p.getText() : null;
                    }
                    case "stream" -> {
                        if (t != JsonToken.VALUE_TRUE && t != JsonToken.VALUE_FALSE && t != JsonToken.VALUE_NULL) {
                            throw Invalid.field("stream", describe(p, t) + " (expected: true or false)");
                        }
                        stream = t == JsonToken.VALUE_TRUE;
                    }
                    case "prompt_cache_key" -> promptCacheKey = optionalString(p, t, name);
                    case "user" -> user = optionalString(p, t, name);
                    case "max_tokens", "max_completion_tokens", "max_output_tokens" -> {
                        if (t == JsonToken.VALUE_NUMBER_INT) {
                            // beyond a long it is still a number the engine judges (a limit's own 400): count it as
                            // the most there is, for a tenant's tokens-per-minute limit
                            maxTokens = Math.max(maxTokens, p.getNumberType() == JsonParser.NumberType.BIG_INTEGER
                                    ? (p.getBigIntegerValue().signum() > 0 ? Long.MAX_VALUE : -1) : p.getLongValue());
                        } else {
                            p.skipChildren();
                        }
                    }
                    case "messages" -> readMessages(p, t, messages);
                    case "prompt" -> readRaw(p, t, prompt);
                    case "input" -> readInput(p, expect(p, t, name, true), response);
                    case "instructions" -> {
                        if (expect(p, t, name, false) == JsonToken.VALUE_STRING) {
                            response.instructions(p.getText());
                        }
                    }
                    default -> p.skipChildren();
                }
            }
            long at = p.currentTokenLocation().getByteOffset(); // the object's '}', read in place from the bytes
            end = t == JsonToken.END_OBJECT && at >= 0 && at < content.readableBytes()
                    && content.getByte(content.readerIndex() + (int) at) == '}' ? (int) at : -1;
            if (p.nextToken() != null) { // the engine would refuse it; say so before choosing one
                throw new Invalid("malformed JSON body: content after the object, on line " + p.currentLocation()
                        .getLineNr() + " (expected: one JSON object)");
            }
        } catch (JsonProcessingException e) {
            throw new Invalid("malformed JSON body: " + Json.message(e.getOriginalMessage()));
        } catch (IOException e) {
            throw new Invalid("unreadable body: " + e.getMessage());
        }
        if (!modelSeen) {
            throw Invalid.field("model", "missing (expected: a model id)");
        }
        if (model.isBlank()) {
            throw Invalid.field("model", "\"" + model + "\" (expected: a non-empty string)");
        }
        // a response's instructions come first in its prompt, as a chat's system message does, wherever they are in
        // the body: one conversation then keys alike through either API
        PromptKey keys = messages.present() ? messages.result() : prompt.present() ? prompt.result() : response.result();
        return new RequestBody(model, stream, promptCacheKey, user, keys, end, maxTokens);
    }

    /**
     * The body fields this gateway reads to classify and route a request. Each may appear once: JSON leaves a repeated
     * name's meaning to the reader (RFC 8259 §4), and the gateway forwards the body as it came, so with a repeated
     * {@code model} or {@code stream} the gateway's reading (the last) and the engine's (the first, or an error, in some
     * parsers) could differ: a tenant allowed one model served another, a stream answered as a whole body.
     */
    private static final java.util.List<String> CLASSIFYING = java.util.List.of("model", "stream", "prompt_cache_key",
            "user", "max_tokens", "max_completion_tokens", "max_output_tokens", "messages", "prompt", "input",
            "instructions");

    /** {@code seen} with {@code name}'s bit set; refused when {@code name} is a classifying field read before. */
    private static int once(String name, int seen) throws Invalid {
        int i = CLASSIFYING.indexOf(name);
        if (i < 0) {
            return seen;
        }
        if ((seen & (1 << i)) != 0) {
            throw Invalid.field(name, "given twice (expected: once; the engine might read the other one)");
        }
        return seen | (1 << i);
    }

    private static void readMessages(JsonParser p, JsonToken t, PromptKeys out) throws IOException, Invalid {
        if (t == JsonToken.VALUE_NULL) {
            return;
        }
        if (t != JsonToken.START_ARRAY) {
            throw Invalid.field("messages", describe(p, t) + " (expected: an array)");
        }
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            if (t != JsonToken.START_OBJECT) {
                throw Invalid.field("messages", "an element is " + describe(p, t) + " (expected: an object)");
            }
            readMessage(p, out);
        }
    }

    /**
     * One message, or a Responses input item, its object just opened: its {@code role} (else its {@code type}) and
     * the text of its {@code content} (a string or parts' {@code text}) and {@code output}.
     */
    private static void readMessage(JsonParser p, PromptKeys out) throws IOException {
        out.beginMessage();
        String role = null;
        String type = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken v = p.nextToken();
            switch (name) {
                case "content" -> readContent(p, v, out);
                case "output" -> readContent(p, v, out);
                case "role" -> role = v == JsonToken.VALUE_STRING ? p.getText() : role;
                case "type" -> type = v == JsonToken.VALUE_STRING ? p.getText() : type;
                default -> p.skipChildren();
            }
        }
        out.endMessage(role != null ? role : type);
    }

    /** A message's content: a string, or parts whose {@code text} counts (the rest, images say, does not). */
    private static void readContent(JsonParser p, JsonToken t, PromptKeys out) throws IOException {
        if (t == JsonToken.VALUE_STRING) {
            text(p, out);
        } else if (t == JsonToken.START_ARRAY) {
            while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                if (t == JsonToken.VALUE_STRING) {
                    text(p, out);
                } else if (t == JsonToken.START_OBJECT) {
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        String name = p.currentName();
                        if (p.nextToken() == JsonToken.VALUE_STRING && name.equals("text")) {
                            text(p, out);
                        } else {
                            p.skipChildren();
                        }
                    }
                } else {
                    p.skipChildren();
                }
            }
        } else {
            p.skipChildren();
        }
    }

    /** A response's {@code input}: a string is a user message, objects are items (messages), the rest raw. */
    private static void readInput(JsonParser p, JsonToken t, PromptKeys out) throws IOException {
        if (t == JsonToken.VALUE_STRING) {
            out.beginMessage();
            text(p, out);
            out.endMessage("user");
        } else if (t == JsonToken.START_ARRAY) {
            while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                if (t == JsonToken.START_OBJECT) {
                    readMessage(p, out);
                } else {
                    readRawValue(p, t, out);
                }
            }
        }
    }

    /** A raw prompt: a string, or strings and token ids, in arrays to any depth (a batch). */
    private static void readRaw(JsonParser p, JsonToken t, PromptKeys out) throws IOException {
        if (t == JsonToken.START_ARRAY) {
            while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                readRawValue(p, t, out);
            }
        } else {
            readRawValue(p, t, out);
        }
    }

    private static void readRawValue(JsonParser p, JsonToken t, PromptKeys out) throws IOException {
        if (t == JsonToken.VALUE_STRING) {
            out.beginRaw();
            text(p, out);
        } else if (t == JsonToken.VALUE_NUMBER_INT) {
            // a pre-tokenized prompt (vLLM takes token ids)
            out.beginRaw();
            if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
                text(p, out); // no token id, but a number the engine will judge
            } else {
                out.token(p.getLongValue());
            }
        } else if (t == JsonToken.START_ARRAY) {
            readRaw(p, t, out); // a batch of token-id prompts
        } else {
            p.skipChildren();
        }
    }

    /** The current string token's characters, read in place from the parser's buffer. */
    private static void text(JsonParser p, PromptKeys out) throws IOException {
        out.text(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
    }

    /**
     * {@code t} when it is a string, null (absent) or, when {@code arrays}, an array; a 400 naming {@code field}
     * otherwise, which the engine would answer anyway.
     */
    private static JsonToken expect(JsonParser p, JsonToken t, String field, boolean arrays) throws IOException, Invalid {
        if (t == JsonToken.VALUE_STRING || t == JsonToken.VALUE_NULL || arrays && t == JsonToken.START_ARRAY) {
            return t;
        }
        throw Invalid.field(field, describe(p, t) + " (expected: " + (arrays ? "a string or an array" : "a string")
                + ")");
    }

    private static String kind(JsonToken t) {
        return switch (t) {
            case START_ARRAY -> "an array";
            case START_OBJECT -> "an object";
            case VALUE_STRING -> "a string";
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> "a number";
            case VALUE_TRUE, VALUE_FALSE -> "a boolean";
            case VALUE_NULL -> "null";
            default -> t.name();
        };
    }

    private static String describe(JsonParser p, JsonToken t) throws IOException {
        return switch (t) {
            case START_ARRAY, START_OBJECT -> kind(t);
            case VALUE_STRING -> "\"" + p.getText() + "\"";
            default -> p.getText();
        };
    }

    private static String optionalString(JsonParser p, JsonToken t, String field) throws IOException, Invalid {
        if (t == JsonToken.VALUE_NULL) {
            return null;
        }
        if (t != JsonToken.VALUE_STRING) {
            throw Invalid.field(field, describe(p, t) + " (expected: a string)");
        }
        return p.getText();
    }
}
