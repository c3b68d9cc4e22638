package dev.sextant.request;

import java.util.ArrayList;
import java.util.List;

/**
 * The HTTP headers and body fields of an OpenAI-style request that decide its class and affinity key.
 * The rules are documented in {@code docs/request-path.md}; in short:
 * <ul>
 *   <li>class: {@code "model"} from the body; {@code x-sextant-residency} (comma-separated region ids) and
 *   {@code x-sextant-priority} (an integer) from the headers;</li>
 *   <li>affinity key, first present wins: body {@code prompt_cache_key}, header {@code x-sextant-session},
 *   body {@code user}, the prompt's structure ({@link PromptKeys}: the conversation's first turn, and the prefix
 *   it shares with other conversations), the request id.</li>
 * </ul>
 * Blank values count as absent. A priority header that is not an integer is ignored.
 *
 * @param model            body {@code model}
 * @param residencyHeader  header {@code x-sextant-residency}, or null
 * @param priorityHeader   header {@code x-sextant-priority}, or null
 * @param promptCacheKey   body {@code prompt_cache_key}, or null
 * @param sessionHeader    header {@code x-sextant-session}, or null
 * @param user             body {@code user}, or null
 * @param prompt           the keys {@link PromptKeys} derived from the prompt's structure, or null when the body
 *                         has no prompt
 * @param requestId        an id unique per request that the client does not choose (the gateway passes its own,
 *                         not the client's {@code x-request-id}): admission sheds by its hash
 */
public record HttpFields(String model, String residencyHeader, String priorityHeader, String promptCacheKey,
                         String sessionHeader, String user, PromptKey prompt, String requestId) {
    /** Header naming the regions a request's data may be processed in. */
    public static final String RESIDENCY_HEADER = "x-sextant-residency";
    /** Header naming a request's priority. */
    public static final String PRIORITY_HEADER = "x-sextant-priority";
    /** Header carrying a session id for affinity. */
    public static final String SESSION_HEADER = "x-sextant-session";

    public HttpFields {
        if (requestId == null || requestId.isBlank()) {
            throw new IllegalArgumentException("requestId: missing (expected: a unique id; generate one when"
                    + " the client sent no x-request-id)");
        }
    }

    /** The request's metadata by the rules above. */
    public RequestMeta toMeta() {
        long key = affinityKey();
        return new RequestMeta(model, residency(residencyHeader), priority(priorityHeader), key,
                prompt != null && key == prompt.conversation() ? prompt.prefix() : 0, Keys.of(requestId));
    }

    /**
     * The affinity key by the precedence above. An explicit key wins and comes without a prefix key: the client
     * has said what belongs together.
     */
    public long affinityKey() {
        if (present(promptCacheKey)) {
            return Keys.of("prompt_cache_key", promptCacheKey);
        }
        if (present(sessionHeader)) {
            return Keys.of("session", sessionHeader);
        }
        if (present(user)) {
            return Keys.of("user", user);
        }
        if (prompt != null) {
            return prompt.conversation();
        }
        return Keys.of(requestId);
    }

    private static boolean present(String s) {
        return s != null && !s.isBlank();
    }

    static List<String> residency(String header) {
        if (!present(header)) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        for (String part : header.split(",")) {
            String r = part.trim().strip(); // control characters and Unicode spaces (U+2028…) alike: blank is absent
            if (!r.isEmpty() && !out.contains(r)) {
                out.add(r);
            }
        }
        return out;
    }

    static int priority(String header) {
        if (!present(header)) {
            return RequestMeta.NO_PRIORITY;
        }
        try {
            return Integer.parseInt(header.trim());
        } catch (NumberFormatException e) {
            return RequestMeta.NO_PRIORITY;
        }
    }
}
