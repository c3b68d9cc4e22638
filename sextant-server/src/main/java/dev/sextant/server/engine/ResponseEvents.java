package dev.sextant.server.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * One answer of the Responses API ({@code POST /v1/responses}) in OpenAI's shape: the response object, with one
 * assistant message of one {@code output_text} part, and, for a stream, its events in OpenAI's order:
 * {@code response.created}, {@code response.in_progress}, {@code response.output_item.added},
 * {@code response.content_part.added}, a {@code response.output_text.delta} per token, {@code response.output_text.done},
 * {@code response.content_part.done}, {@code response.output_item.done}, and {@code response.completed} (or
 * {@code response.incomplete} when {@code max_output_tokens} cut it short), each with its {@code sequence_number}
 * from 0. A Responses stream has no {@code data: [DONE]}: its last event says it is over.
 *
 * <p>Touched on one channel's event loop only.
 */
final class ResponseEvents {
    private final ObjectMapper json;
    private final GenerationRequest g;
    private final JsonNode request;
    private final String id;
    private final String itemId;
    private final long created;
    private final StringBuilder text = new StringBuilder();
    private int sequence;

    /**
     * @param request the request's body, whose settings the response object repeats as OpenAI's does
     *                ({@code instructions}, {@code max_output_tokens}, {@code previous_response_id}, {@code user},
     *                {@code metadata})
     * @param id      the response's id ({@code resp_…}); its message item's id is derived from it
     */
    ResponseEvents(ObjectMapper json, GenerationRequest g, JsonNode request, String id, long created) {
        this.json = json;
        this.g = g;
        this.request = request;
        this.id = id;
        this.itemId = "msg_" + id.substring(id.indexOf('_') + 1);
        this.created = created;
    }

    /** The events that open a stream, before its first token. */
    List<ObjectNode> opening() {
        // numbered in the order made
        ObjectNode inProgress = response("in_progress", null, null);
        ObjectNode created = withResponse(event("response.created"), inProgress);
        ObjectNode progress = withResponse(event("response.in_progress"), inProgress.deepCopy());
        ObjectNode item = event("response.output_item.added").put("output_index", 0);
        item.set("item", message("in_progress", null));
        ObjectNode part = event("response.content_part.added").put("item_id", itemId).put("output_index", 0)
                .put("content_index", 0);
        part.set("part", outputText(""));
        return List.of(created, progress, item, part);
    }

    /** The event of one token, {@code word} (kept for the events that close the stream). */
    ObjectNode delta(String word) {
        text.append(word);
        ObjectNode e = event("response.output_text.delta").put("item_id", itemId).put("output_index", 0)
                .put("content_index", 0).put("delta", word);
        e.putArray("logprobs");
        return e;
    }

    /**
     * The events that close a stream whose tokens went out as {@link #delta}s.
     *
     * @param reason {@code stop}, or {@code length} when {@code max_output_tokens} ended it
     */
    List<ObjectNode> closing(String reason, int generated, Sequence.Timing timing) {
        String all = text.toString(); // events numbered in the order made, as in opening()
        ObjectNode done = event("response.output_text.done").put("item_id", itemId).put("output_index", 0)
                .put("content_index", 0).put("text", all);
        done.putArray("logprobs");
        ObjectNode partDone = event("response.content_part.done").put("item_id", itemId).put("output_index", 0)
                .put("content_index", 0);
        partDone.set("part", outputText(all));
        ObjectNode itemDone = event("response.output_item.done").put("output_index", 0);
        itemDone.set("item", message(status(reason), all));
        ObjectNode end = event(reason.equals("length") ? "response.incomplete" : "response.completed");
        return List.of(done, partDone, itemDone, withResponse(end, whole(all, reason, generated, timing)));
    }

    /** The finished response object: of a request that did not stream, or in the event that ends a stream. */
    ObjectNode whole(String all, String reason, int generated, Sequence.Timing timing) {
        ObjectNode usage = json.createObjectNode().put("input_tokens", g.promptTokens());
        usage.putObject("input_tokens_details").put("cached_tokens", timing.cachedTokens());
        usage.put("output_tokens", generated);
        usage.putObject("output_tokens_details").put("reasoning_tokens", 0);
        usage.put("total_tokens", g.promptTokens() + generated);
        ObjectNode r = response(status(reason), message(status(reason), all), usage);
        if (reason.equals("length")) {
            r.putObject("incomplete_details").put("reason", "max_output_tokens");
        }
        r.set("engine_timing", ChoicesSink.timingJson(json, timing));
        return r;
    }

    private static String status(String reason) {
        return reason.equals("length") ? "incomplete" : "completed";
    }

    private ObjectNode event(String type) {
        return json.createObjectNode().put("type", type).put("sequence_number", sequence++);
    }

    private static ObjectNode withResponse(ObjectNode event, ObjectNode response) {
        event.set("response", response);
        return event;
    }

    /** The response object; {@code output} null while nothing is out, {@code usage} null until the end. */
    private ObjectNode response(String status, ObjectNode output, ObjectNode usage) {
        ObjectNode r = json.createObjectNode().put("id", id).put("object", "response").put("created_at", created)
                .put("status", status);
        r.putNull("error");
        r.putNull("incomplete_details");
        r.set("instructions", echo("instructions"));
        r.set("max_output_tokens", echo("max_output_tokens"));
        r.put("model", g.model());
        ArrayNode out = r.putArray("output");
        if (output != null) {
            out.add(output);
        }
        r.put("parallel_tool_calls", true);
        r.set("previous_response_id", echo("previous_response_id"));
        ObjectNode reasoning = r.putObject("reasoning");
        reasoning.putNull("effort");
        reasoning.putNull("summary");
        r.put("store", false).put("temperature", 1.0);
        r.putObject("text").putObject("format").put("type", "text");
        r.put("tool_choice", "auto");
        r.putArray("tools");
        r.put("top_p", 1.0).put("truncation", "disabled");
        r.set("usage", usage == null ? json.nullNode() : usage);
        r.set("user", echo("user"));
        JsonNode metadata = request.get("metadata");
        r.set("metadata", metadata != null && metadata.isObject() ? metadata : json.createObjectNode());
        return r;
    }

    private JsonNode echo(String field) {
        JsonNode v = request.get(field);
        return v == null ? json.nullNode() : v;
    }

    /** The assistant's message item; {@code all} null for one with no content yet. */
    private ObjectNode message(String status, String all) {
        ObjectNode m = json.createObjectNode().put("id", itemId).put("type", "message").put("status", status)
                .put("role", "assistant");
        ArrayNode content = m.putArray("content");
        if (all != null) {
            content.add(outputText(all));
        }
        return m;
    }

    private ObjectNode outputText(String all) {
        ObjectNode part = json.createObjectNode().put("type", "output_text").put("text", all);
        part.putArray("annotations");
        part.putArray("logprobs");
        return part;
    }
}
