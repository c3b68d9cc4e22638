package dev.sextant.server.auth;

/**
 * Tells who sent a request from its {@code Authorization} header: the control plane's single shared token
 * ({@link #shared}) or its credentials file ({@link CredentialsFile}). Safe to call from any thread; quick enough for
 * an event loop (a SHA-256 of the token and a comparison with each known digest).
 */
public interface Authenticator {
    /**
     * The principal whose token {@code authorization} ({@code Bearer <token>}, the scheme in any case) carries, or
     * null when it carries none this control plane knows (missing, another scheme, an unknown or revoked token).
     */
    Principal authenticate(String authorization);

    /** The single shared token of the simple mode: whoever holds it is an {@link Principal#OPERATOR operator}. */
    static Authenticator shared(BearerToken token) {
        if (token == null) {
            throw new IllegalArgumentException("token: missing (expected: a bearer token)");
        }
        return authorization -> token.accepts(authorization) ? Principal.OPERATOR : null;
    }
}
