package dev.sextant.config;

/** Checks of the URLs a configuration names for Sextant to call. */
public final class Urls {
    private Urls() {
    }

    /**
     * Whether {@code text} is a base URL Sextant can call: http or https, a host, a port (if given) in 1..65535, no
     * query or fragment. A path is kept as a prefix of the API's paths (a proxy in front of it). Engine endpoints in a
     * topology and a gateway's {@code control_plane} are held to it.
     */
    public static boolean isHttpBase(String text) {
        try {
            java.net.URI u = new java.net.URI(text);
            return ("http".equalsIgnoreCase(u.getScheme()) || "https".equalsIgnoreCase(u.getScheme()))
                    && u.getHost() != null && u.getPort() <= 65535 && u.getPort() != 0 && u.getRawQuery() == null
                    && u.getRawFragment() == null;
        } catch (java.net.URISyntaxException e) {
            return false;
        }
    }
}
