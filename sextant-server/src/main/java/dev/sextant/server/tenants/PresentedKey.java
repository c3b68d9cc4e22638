package dev.sextant.server.tenants;

import dev.sextant.server.auth.BearerToken;

/**
 * The API key a request presents, from the two headers OpenAI's clients send it in: {@code Authorization: Bearer
 * <key>} (the OpenAI SDKs) and {@code api-key: <key>} (the Azure OpenAI SDKs). Every value of both headers counts:
 * an {@code Authorization} of another scheme or with no token, and a blank {@code api-key}, present no key; the keys
 * the others present must all be the same one, else the request's credentials are ambiguous and it is refused, never
 * served as one of the tenants it names ({@code docs/tenants.md}).
 *
 * @param key       the key presented, without surrounding whitespace; null when none is, or when they differ
 * @param ambiguous the headers present more than one key
 */
public record PresentedKey(String key, boolean ambiguous) {
    /** The Azure OpenAI SDKs' header, as HTTP/2 spells it (header names are matched without regard to case). */
    public static final String API_KEY = "api-key";
    /** {@link #API_KEY} as Netty's headers look it up fastest (its hash computed once). */
    public static final io.netty.util.AsciiString API_KEY_HEADER = io.netty.util.AsciiString.cached(API_KEY);
    /** No key presented. */
    public static final PresentedKey NONE = new PresentedKey(null, false);
    /** Different keys presented. */
    public static final PresentedKey AMBIGUOUS = new PresentedKey(null, true);

    public PresentedKey {
        if (ambiguous && key != null) {
            throw new IllegalArgumentException("key: set with ambiguous (expected: no key when the keys differ)");
        }
    }

    /** The key a request's headers present: every value of its {@code Authorization} and {@code api-key} headers. */
    public static PresentedKey of(io.netty.handler.codec.http.HttpHeaders headers) {
        return of(headers.getAll(io.netty.handler.codec.http.HttpHeaderNames.AUTHORIZATION),
                headers.getAll(API_KEY_HEADER));
    }

    /**
     * The key that the values of a request's {@code Authorization} headers and of its {@code api-key} headers present,
     * each list in the order received (empty when the header is absent).
     */
    public static PresentedKey of(Iterable<String> authorization, Iterable<String> apiKey) {
        BearerToken.Presented bearer = BearerToken.Presented.of(authorization);
        if (bearer.ambiguous()) {
            return AMBIGUOUS;
        }
        String key = bearer.token();
        for (String a : apiKey) {
            String k = a == null ? "" : a.strip();
            if (!k.isEmpty() && key != null && !k.equals(key)) {
                return AMBIGUOUS;
            }
            key = k.isEmpty() ? key : k;
        }
        return key == null ? NONE : new PresentedKey(key, false);
    }
}
