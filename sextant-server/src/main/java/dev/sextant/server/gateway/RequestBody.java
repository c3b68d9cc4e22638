package dev.sextant.server.gateway;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.sextant.config.Json;
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
 * @param promptText     leading prompt text, at most 1,024 characters: chat messages' contents in order; else
 *                       {@code prompt}; else a response's {@code instructions} then its {@code input} (a string, or
 *                       the text of its items' {@code content} and of tool outputs' {@code output}, in order), which is
 *                       also an embedding request's {@code input}. Token ids count as decimal numbers, each followed by
 *                       a space
 * @param end            where the body's object closes: the offset of its last {@code '}'} from the buffer's reader
 *                       index, or -1 when it cannot be told (then nothing is added to the body)
 */
record RequestBody(String model, boolean stream, String promptCacheKey, String user, String promptText, int end) {
    static final int PROMPT_CHARS = 1024;

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
        StringBuilder messages = new StringBuilder();
        StringBuilder prompt = new StringBuilder();
        StringBuilder input = new StringBuilder();
        StringBuilder instructions = new StringBuilder();
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
                    case "messages" -> readMessages(p, t, messages);
                    case "prompt" -> readText(p, t, prompt);
                    case "input" -> readText(p, expect(p, t, name, true), input);
                    case "instructions" -> readText(p, expect(p, t, name, false), instructions);
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
        StringBuilder text = messages.length() > 0 ? messages : prompt.length() > 0 ? prompt : instructions;
        if (text == instructions) {
            append(instructions, input.toString());
        }
        return new RequestBody(model, stream, promptCacheKey, user, text.length() == 0 ? null : text.toString(), end);
    }

    private static void readMessages(JsonParser p, JsonToken t, StringBuilder out) throws IOException, Invalid {
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
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken v = p.nextToken();
                if (name.equals("content")) {
                    readText(p, v, out);
                } else {
                    p.skipChildren();
                }
            }
        }
    }

    /** Appends a string, or the strings (and parts' {@code text}) of an array, up to {@link #PROMPT_CHARS}. */
    private static void readText(JsonParser p, JsonToken t, StringBuilder out) throws IOException {
        if (t == JsonToken.VALUE_STRING) {
            append(out, p.getText());
        } else if (t == JsonToken.START_ARRAY) {
            while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                if (t == JsonToken.VALUE_STRING) {
                    append(out, p.getText());
                } else if (t == JsonToken.VALUE_NUMBER_INT) {
                    // a pre-tokenized prompt (vLLM takes token ids): its ids, each ended by a space, so a
                    // shared token prefix gives a shared text prefix
                    append(out, p.getText());
                    append(out, " ");
                } else if (t == JsonToken.START_ARRAY) {
                    readText(p, t, out); // a batch of token-id prompts
                } else if (t == JsonToken.START_OBJECT) {
                    // a content part's text; a Responses input item's content (a string or parts), or a tool call's
                    // output, as a chat's tool message has its content
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        String name = p.currentName();
                        JsonToken v = p.nextToken();
                        if ((name.equals("text") || name.equals("output")) && v == JsonToken.VALUE_STRING) {
                            append(out, p.getText());
                        } else if (name.equals("content")) {
                            readText(p, v, out);
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

    private static void append(StringBuilder out, String s) {
        int room = PROMPT_CHARS - out.length();
        if (room > 0) {
            out.append(s, 0, Math.min(room, s.length()));
        }
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
