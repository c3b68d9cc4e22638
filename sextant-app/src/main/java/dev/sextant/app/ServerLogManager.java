package dev.sextant.app;

import java.util.logging.LogManager;

/**
 * The JDK's log manager but for one call: when the JVM shuts down on a signal, the JDK's manager closes every log
 * handler from a shutdown hook of its own, which runs beside the one that stops the servers ({@link Running}), so what
 * they log while they stop (a gateway's drain, an in-flight request cut by its drain timeout) would be lost. This one
 * ignores that hook's call, as Tomcat's log manager does; handlers write each record as it comes, so nothing waits in
 * them when the process ends. {@link Sextant#main} installs it.
 */
public final class ServerLogManager extends LogManager {
    /** Made by the JDK, from the {@code java.util.logging.manager} system property. */
    public ServerLogManager() {
    }

    @Override
    public void reset() {
        if (Thread.currentThread().getClass().getName().startsWith(LogManager.class.getName() + "$")) {
            return; // the JDK's shutdown hook: the handlers stay until the process ends
        }
        super.reset();
    }
}
