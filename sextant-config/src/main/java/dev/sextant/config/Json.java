package dev.sextant.config;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.module.SimpleModule;
import dev.sextant.topology.PriorityScheduling;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Sextant's JSON conventions for its records: snake_case field names, two-space indentation with
 * {@code \n} line ends on every platform, map entries sorted by key, and non-finite numbers (NaN,
 * ±infinity) written as {@code null} and read back as NaN. Equal values give byte-identical text.
 */
public final class Json {

    static final ObjectMapper MAPPER = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
            .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            // a snapshot's and a route's engine groups are written only when there are some
            .addMixIn(dev.sextant.snapshot.Snapshot.class, GroupsWhenAny.class)
            .addMixIn(dev.sextant.snapshot.Route.class, RouteFields.class)
            .addMixIn(dev.sextant.snapshot.EngineState.class, EngineFields.class)
            .addModule(new SimpleModule("sextant-words")
                    .addSerializer(PriorityScheduling.class, new Word())
                    .addDeserializer(PriorityScheduling.class, new WordOf()))
            .addModule(new SimpleModule("sextant-doubles")
                    .addSerializer(Double.class, new FiniteOrNull())
                    .addSerializer(double.class, new FiniteOrNull())
                    .addDeserializer(Double.class, new NullAsNaN())
                    .addDeserializer(double.class, new NullAsNaN()))
            .build();

    private static final ObjectWriter WRITER = MAPPER.writer(new DefaultPrettyPrinter()
            .withObjectIndenter(new DefaultIndenter("  ", "\n"))
            .withArrayIndenter(new DefaultIndenter("  ", "\n")));

    /**
     * Jackson's message for a problem, as one line for a person: the first line of it (the rest is a source
     * location), and an unclosed object's "start marker" given as the line it opened on rather than through a
     * source Jackson does not show. {@code "malformed"} when there is no message.
     */
    public static String message(String jacksonMessage) {
        if (jacksonMessage == null) {
            return "malformed";
        }
        int nl = jacksonMessage.indexOf('\n');
        return (nl < 0 ? jacksonMessage : jacksonMessage.substring(0, nl)).trim()
                .replaceAll("\\(start marker at \\[Source: [^;]*; line: (\\d+), column: \\d+\\]\\)", "(opened on line $1)")
                // a limit's message names the Jackson setting that holds it, which says nothing to a client
                .replaceAll(", from `StreamReadConstraints\\.[A-Za-z]+\\(\\)`", "");
    }

    private Json() {
    }

    /** {@code value} (a record, list or map of them) as pretty JSON, ending with a line feed. */
    public static String write(Object value) {
        try {
            return WRITER.writeValueAsString(value) + "\n";
        } catch (IOException e) {
            // Writing to a string fails only for a value Jackson cannot describe: a programming error.
            throw new UncheckedIOException(e);
        }
    }

    private abstract static class GroupsWhenAny {
        @JsonInclude(JsonInclude.Include.NON_EMPTY)
        abstract Object groups();
    }

    /**
     * A route's groups only when it has some, and its allowed utilization only when its producer computed one (NaN
     * otherwise): a snapshot read from an older producer writes back the text it was read from.
     */
    private abstract static class RouteFields extends GroupsWhenAny {
        @JsonInclude(value = JsonInclude.Include.CUSTOM, valueFilter = NaNFilter.class)
        abstract double allowedUtilization();
    }

    /**
     * An engine's priority scheduling only when it has one, and its batch places and its cache's keeping time only when
     * the policy knows them: the snapshots of other fleets read as they were.
     */
    private abstract static class EngineFields {
        @JsonInclude(value = JsonInclude.Include.CUSTOM, valueFilter = NoneFilter.class)
        abstract PriorityScheduling priorityScheduling();

        @JsonInclude(value = JsonInclude.Include.CUSTOM, valueFilter = NaNFilter.class)
        abstract double batchPlaces();

        @JsonInclude(value = JsonInclude.Include.CUSTOM, valueFilter = NaNFilter.class)
        abstract double contextKeptSeconds();
    }

    /** Leaves {@link PriorityScheduling#NONE} out. */
    private static final class NoneFilter {
        @Override
        public boolean equals(Object value) {
            return value == PriorityScheduling.NONE;
        }

        @Override
        public int hashCode() {
            return 0;
        }
    }

    /** A priority scheduling as the word configuration files use ({@code lower_first}). */
    private static final class Word extends JsonSerializer<PriorityScheduling> {
        @Override
        public void serialize(PriorityScheduling value, JsonGenerator gen, SerializerProvider serializers)
                throws IOException {
            gen.writeString(value.word());
        }
    }

    private static final class WordOf extends JsonDeserializer<PriorityScheduling> {
        @Override
        public PriorityScheduling deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
            PriorityScheduling s = p.currentToken() == JsonToken.VALUE_STRING ? PriorityScheduling.of(p.getText())
                    : null;
            if (s == null) {
                throw ctxt.weirdStringException(p.getText(), PriorityScheduling.class,
                        "expected: none, lower_first or higher_first");
            }
            return s;
        }
    }

    /** Leaves a NaN number out (Jackson drops the values its filter's {@code equals} accepts). */
    private static final class NaNFilter {
        @Override
        public boolean equals(Object value) {
            return value instanceof Double d && d.isNaN();
        }

        @Override
        public int hashCode() {
            return 0;
        }
    }

    private static final class FiniteOrNull extends JsonSerializer<Double> {
        @Override
        public void serialize(Double value, JsonGenerator gen, SerializerProvider serializers) throws IOException {
            if (Double.isFinite(value)) {
                gen.writeNumber(value);
            } else {
                gen.writeNull();
            }
        }
    }

    private static final class NullAsNaN extends JsonDeserializer<Double> {
        @Override
        public Double deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
            if (p.currentToken() == JsonToken.VALUE_NUMBER_INT || p.currentToken() == JsonToken.VALUE_NUMBER_FLOAT) {
                return p.getDoubleValue();
            }
            if (p.currentToken() == JsonToken.VALUE_STRING) {
                throw ctxt.weirdStringException(p.getText(), Double.class, "not a number");
            }
            return (Double) ctxt.handleUnexpectedToken(Double.class, p);
        }

        @Override
        public Double getNullValue(DeserializationContext ctxt) {
            return Double.NaN;
        }
    }
}
