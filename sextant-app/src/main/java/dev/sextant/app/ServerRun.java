package dev.sextant.app;

import picocli.CommandLine.Option;

/** Options of the commands that run one server from its config file ({@code gateway}, {@code control-plane}). */
final class ServerRun {
    @Option(names = "--port", paramLabel = "PORT", description = "Overrides the file's port.")
    Integer port;

    @Option(names = "--duration", paramLabel = "SECONDS", description = "Stop after this long (default: until Ctrl-C).")
    double duration;

    /** Refuses a negative or non-finite duration and a port outside 0..65535, naming the option. */
    void check() {
        Running.checkSeconds(duration);
        if (port != null) {
            Running.checkPort("--port", port);
        }
    }

    /** The port to bind: {@code --port}, else the file's {@code port}, else {@code fallback}. */
    int port(ServerFile f, int fallback) {
        return port != null ? port : f.integer("port", fallback);
    }
}
