package dev.sextant.server.engine;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;

/**
 * Where the tokens of one generation request go, for all of its choices ({@code n} per prompt): streamed as
 * server-sent events ({@link Streamed}) or collected into one JSON answer ({@link Whole}). Called on the scheduler's
 * thread; each sink hops to its connection's event loop to write, and its state after construction is touched there
 * only (but for {@link #started()}, the scheduler's).
 */
abstract class ChoicesSink implements Sequence.Sink {
    /** What a sink needs of its connection's handler. */
    interface Handler {
        /** Writes {@code body} as a whole JSON answer, then goes on to the connection's next request (or closes). */
        void respond(ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus status, JsonNode body);

        /** After an answer's last write: the next request, or a close. */
        ChannelFutureListener afterResponse(boolean keepAlive);
    }

    private static final String[] WORDS = {"the", "engine", "routes", "tokens", "to", "a", "near", "cluster",
        "while", "cache", "stays", "warm", "and", "latency", "low", "so"};

    final Handler handler;
    final EngineEmulator engine;
    final ObjectMapper json;
    final ChannelHandlerContext ctx;
    final boolean keepAlive;
    final GenerationRequest g;
    final String id;
    final long created;
    final ResponseEvents events; // a Responses API answer's, else null
    private final String requestId;
    private boolean started; // scheduler thread
    // the channel's loop only:
    final Sequence.Timing[] timings;
    int finishedChoices;
    int generated;

    ChoicesSink(Handler handler, EngineEmulator engine, ChannelHandlerContext ctx, boolean keepAlive,
                GenerationRequest g, String id, long created, ResponseEvents events, String requestId) {
        this.handler = handler;
        this.engine = engine;
        this.json = engine.json;
        this.ctx = ctx;
        this.keepAlive = keepAlive;
        this.g = g;
        this.id = id;
        this.created = created;
        this.events = events;
        this.requestId = requestId;
        this.timings = new Sequence.Timing[g.choices()];
    }

    /** Counts the request as generated once, whichever of its choices produced the first token. */
    final void started() {
        if (!started) {
            started = true;
            engine.generating(requestId);
        }
    }

    /** Token {@code index} of choice {@code choice}: the words differ between the choices of one prompt. */
    final String word(int choice, int index) {
        int offset = Math.floorMod(g.promptOf(choice).conversationKey().hashCode() + choice % g.n(), WORDS.length);
        String w = WORDS[(index + offset) % WORDS.length];
        return index == 0 ? w : " " + w;
    }

    /** Records a finished choice; true when it was the last. Channel's loop. */
    final boolean lastChoice(Sequence.Timing timing, int choice, int tokens) {
        timings[choice] = timing;
        generated += tokens;
        return ++finishedChoices == timings.length;
    }

    /** OpenAI's usage of the whole request: each prompt's tokens, and its cache hit, once; every choice's output. */
    final ObjectNode usage() {
        int cached = 0;
        for (int i = 0; i < timings.length; i += g.n()) {
            cached += timings[i].cachedTokens();
        }
        ObjectNode usage = json.createObjectNode().put("prompt_tokens", g.promptTokens())
                .put("completion_tokens", generated).put("total_tokens", g.promptTokens() + generated);
        usage.putObject("prompt_tokens_details").put("cached_tokens", cached);
        return usage;
    }

    @Override
    public final void finished(Sequence sequence, String reason) {
        int tokens = sequence.generated;
        int choice = sequence.choice;
        Sequence.Timing timing = sequence.timing();
        ctx.executor().execute(() -> finished(choice, reason, tokens, timing));
    }

    /** Choice {@code choice} ended with {@code tokens} output tokens for {@code reason}. Channel's loop. */
    abstract void finished(int choice, String reason, int tokens, Sequence.Timing timing);

    @Override
    public void crashed(Sequence sequence) {
        ctx.executor().execute(() -> ctx.close());
    }

    /** A chunk of a stream for one choice, without its content and with a null {@code finish_reason}. */
    final ObjectNode chunk(int choice) {
        ObjectNode root = json.createObjectNode().put("id", id)
                .put("object", g.chat() ? "chat.completion.chunk" : "text_completion")
                .put("created", created).put("model", g.model());
        ObjectNode c = root.putArray("choices").addObject().put("index", choice);
        if (!g.chat()) {
            c.putNull("logprobs");
        }
        c.putNull("finish_reason");
        return root;
    }

    /** A request's {@code engine_timing}: the model's times for it. */
    static ObjectNode timingJson(ObjectMapper json, Sequence.Timing t) {
        return json.createObjectNode().put("queued_ms", t.queuedMs()).put("prefill_ms", t.prefillMs())
                .put("ttft_ms", t.ttftMs()).put("decode_ms", t.decodeMs()).put("cached_tokens", t.cachedTokens());
    }

    ByteBuf sse(ChannelHandlerContext ctx, JsonNode event) {
        return sse(ctx, null, event);
    }

    /**
     * A Responses API event: its {@code type} also in an {@code event:} line before the data, as OpenAI and vLLM send
     * it.
     */
    ByteBuf responseEvent(ChannelHandlerContext ctx, JsonNode event) {
        return sse(ctx, event.get("type").asText(), event);
    }

    /** A server-sent event: {@code event: <name>} when {@code name} is not null, then {@code data: <event>}. */
    ByteBuf sse(ChannelHandlerContext ctx, String name, JsonNode event) {
        try {
            byte[] bytes = json.writeValueAsBytes(event);
            byte[] head = name == null ? new byte[0] : ("event: " + name + "\n").getBytes(StandardCharsets.UTF_8);
            ByteBuf buf = ctx.alloc().buffer(head.length + bytes.length + 8);
            buf.writeBytes(head).writeBytes(DATA).writeBytes(bytes).writeBytes(END);
            return buf;
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a JSON tree always serializes", e);
        }
    }

    private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] END = "\n\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] GARBAGE = "zz-not-a-chunk-size\r\n{\"garbage\r\n".getBytes(StandardCharsets.US_ASCII);


    /** Streams tokens as server-sent events: completion chunks, or a Responses stream's events. */
    static final class Streamed extends ChoicesSink {
        private final Faults.Corruption corruption;
        private boolean corrupted; // touched on the channel's loop only

        Streamed(Handler handler, EngineEmulator engine, ChannelHandlerContext ctx, boolean keepAlive,
                 GenerationRequest g, String id, long created, Faults.Corruption corruption, ResponseEvents events,
                 String requestId) {
            super(handler, engine, ctx, keepAlive, g, id, created, events, requestId);
            this.corruption = corruption;
        }

        /**
         * A choice's first event, sent with its first token as vLLM does (its first output, after prefill): the
         * assistant role with empty content, or an empty completion text.
         */
        private ObjectNode firstEvent(int choice) {
            ObjectNode first = chunk(choice);
            ObjectNode c = (ObjectNode) first.get("choices").get(0);
            if (g.chat()) {
                c.putObject("delta").put("role", "assistant").put("content", "");
            } else {
                c.put("text", "");
            }
            return first;
        }

        /** Applies the stream corruption fault after the first token chunk; true when nothing more may be written. */
        private boolean corrupt() {
            if (corruption == Faults.Corruption.NONE) {
                return false;
            }
            if (corrupted) {
                return corruption == Faults.Corruption.TRUNCATE;
            }
            corrupted = true;
            if (corruption == Faults.Corruption.TRUNCATE) {
                ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(handler.afterResponse(keepAlive));
                return true;
            }
            // raw bytes written below the HTTP encoder (which would frame them as a chunk): a chunk-size line that
            // is not hexadecimal, in the middle of the body
            ctx.pipeline().firstContext().writeAndFlush(Unpooled.wrappedBuffer(GARBAGE));
            return false;
        }

        @Override
        public boolean writable() {
            return ctx.channel().isWritable();
        }

        @Override
        public void token(Sequence sequence, int index) {
            started();
            int choice = sequence.choice;
            ctx.executor().execute(() -> {
                if (!ctx.channel().isActive() || corrupted && corruption == Faults.Corruption.TRUNCATE) {
                    return;
                }
                if (events != null) {
                    if (index == 0) { // the opening events with the first token, as a chat stream's first event
                        for (ObjectNode e : events.opening()) {
                            ctx.write(new DefaultHttpContent(responseEvent(ctx, e)));
                        }
                    }
                    ctx.writeAndFlush(new DefaultHttpContent(responseEvent(ctx, events.delta(word(choice, index)))));
                    corrupt();
                    return;
                }
                ObjectNode c = chunk(choice);
                ObjectNode node = (ObjectNode) c.get("choices").get(0);
                if (g.chat()) {
                    node.putObject("delta").put("content", word(choice, index));
                } else {
                    node.put("text", word(choice, index));
                }
                ByteBuf out = sse(ctx, c);
                if (index == 0) { // one write: the choice's first event and its first token's
                    ByteBuf first = sse(ctx, firstEvent(choice));
                    out = ctx.alloc().compositeBuffer(2).addComponents(true, first, out);
                }
                ctx.writeAndFlush(new DefaultHttpContent(out));
                corrupt();
            });
        }

        @Override
        void finished(int choice, String reason, int tokens, Sequence.Timing timing) {
            if (!ctx.channel().isActive() || (corrupted && corruption == Faults.Corruption.TRUNCATE)) {
                return;
            }
            boolean last = lastChoice(timing, choice, tokens);
            if (events != null) { // a Responses stream ends with its last event, no [DONE]
                for (ObjectNode e : events.closing(reason, tokens, timing)) {
                    ctx.write(new DefaultHttpContent(responseEvent(ctx, e)));
                }
                ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(handler.afterResponse(keepAlive));
                return;
            }
            ObjectNode end = chunk(choice);
            ObjectNode node = (ObjectNode) end.get("choices").get(0);
            if (g.chat()) {
                node.putObject("delta");
            } else {
                node.put("text", "");
            }
            node.put("finish_reason", reason);
            end.set("engine_timing", timingJson(json, timing));
            ctx.write(new DefaultHttpContent(sse(ctx, end)));
            if (!last) {
                ctx.flush();
                return;
            }
            if (g.includeUsage()) {
                ObjectNode u = json.createObjectNode().put("id", id)
                        .put("object", g.chat() ? "chat.completion.chunk" : "text_completion")
                        .put("created", created).put("model", g.model());
                u.putArray("choices");
                u.set("usage", usage());
                ctx.write(new DefaultHttpContent(sse(ctx, u)));
            }
            ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(DONE)));
            ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(handler.afterResponse(keepAlive));
        }
    }

    /** Collects tokens into one JSON completion or response. Touched on the channel's event loop only. */
    static final class Whole extends ChoicesSink {
        private final StringBuilder[] texts;
        private final String[] reasons;

        Whole(Handler handler, EngineEmulator engine, ChannelHandlerContext ctx, boolean keepAlive,
              GenerationRequest g, String id, long created, ResponseEvents events, String requestId) {
            super(handler, engine, ctx, keepAlive, g, id, created, events, requestId);
            this.texts = new StringBuilder[g.choices()];
            this.reasons = new String[g.choices()];
            for (int i = 0; i < texts.length; i++) {
                texts[i] = new StringBuilder();
            }
        }

        @Override
        public boolean writable() {
            return true; // nothing is written before the end
        }

        @Override
        public void token(Sequence sequence, int index) {
            started();
            int choice = sequence.choice;
            ctx.executor().execute(() -> texts[choice].append(word(choice, index)));
        }

        @Override
        void finished(int choice, String reason, int tokens, Sequence.Timing timing) {
            reasons[choice] = reason;
            if (!lastChoice(timing, choice, tokens) || !ctx.channel().isActive()) {
                return;
            }
            if (events != null) {
                handler.respond(ctx, keepAlive, HttpResponseStatus.OK, events.whole(texts[0].toString(), reason, tokens,
                        timing));
                return;
            }
            ObjectNode root = json.createObjectNode().put("id", id)
                    .put("object", g.chat() ? "chat.completion" : "text_completion")
                    .put("created", created).put("model", g.model());
            ArrayNode choices = root.putArray("choices");
            for (int i = 0; i < texts.length; i++) {
                ObjectNode c = choices.addObject().put("index", i);
                if (g.chat()) {
                    c.putObject("message").put("role", "assistant").put("content", texts[i].toString());
                } else {
                    c.put("text", texts[i].toString());
                }
                c.putNull("logprobs");
                c.put("finish_reason", reasons[i]);
            }
            root.set("usage", usage());
            root.set("engine_timing", timingJson(json, timings[0]));
            handler.respond(ctx, keepAlive, HttpResponseStatus.OK, root);
        }
    }
}
