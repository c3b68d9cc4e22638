package dev.sextant.app;

import picocli.CommandLine.Option;

/** Options of every command. */
final class Common {
    @Option(names = "--verbose", description = "On an internal error, print the stack trace.")
    boolean verbose;
}
