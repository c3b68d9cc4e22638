package dev.sextant.app;

import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigProblem;
import dev.sextant.server.internal.ListenException;
import dev.sextant.server.internal.StartException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Spec;

/**
 * The {@code sextant} command line: {@code solve}, {@code explain} and {@code compare}; and the servers:
 * {@code demo}, {@code gateway}, {@code control-plane} and {@code engine}.
 *
 * <p>Exit codes: 0 when it worked; 2 for bad input (a topology or snapshot file with problems, a bad
 * option, an unknown gateway cluster or class, a server's address that cannot be listened on), with one line per
 * problem on standard error; 1 for a server that could not start for a reason outside its input (one line), or an
 * internal error, with its message (and the stack trace under {@code --verbose}).
 */
@Command(name = "sextant", mixinStandardHelpOptions = true, versionProvider = Sextant.Version.class,
        description = "Computes an LLM inference routing policy from a topology, explains it, compares policies, and runs the servers.",
        synopsisSubcommandLabel = "COMMAND")
public final class Sextant implements Callable<Integer> {
    /** Exit code of bad input. */
    public static final int EXIT_BAD_INPUT = 2;
    /** Exit code of an internal error. */
    public static final int EXIT_INTERNAL = 1;

    @Spec
    CommandLine.Model.CommandSpec spec;

    private Sextant() {
    }

    /** Runs the command line and exits with its exit code. */
    public static void main(String[] args) {
        if (System.getProperty("java.util.logging.manager") == null) {
            // before anything logs: what the servers log while a signal stops them must reach the log
            System.setProperty("java.util.logging.manager", ServerLogManager.class.getName());
        }
        if (System.getProperty("java.util.logging.SimpleFormatter.format") == null) {
            // one line per log record, for the servers' logs and access logs
            System.setProperty("java.util.logging.SimpleFormatter.format", "%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n");
        }
        PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
        PrintWriter err = new PrintWriter(new OutputStreamWriter(System.err, StandardCharsets.UTF_8), true);
        System.exit(run(Services.production(), out, err, args));
    }

    /** Runs the command line with these services and streams; returns the exit code. */
    static int run(Services services, PrintWriter out, PrintWriter err, String... args) {
        CommandLine cl = new CommandLine(new Sextant())
                .addSubcommand(new SolveCommand(services, out))
                .addSubcommand(new ExplainCommand(services, out))
                .addSubcommand(new CompareCommand(services, out, err))
                .addSubcommand(new DemoCommand(out))
                .addSubcommand(new GatewayCommand(out))
                .addSubcommand(new ControlPlaneCommand(out))
                .addSubcommand(new EngineCommand(out))
                .addSubcommand(new HashKeyCommand(out))
                .addSubcommand(new RegisterCommand(out))
                .addSubcommand(new SimulateCommand(out, System.err))
                .addSubcommand(new SweepCommand(out, System.err))
                .addSubcommand(new AccuracyCommand(out, System.err))
                .addSubcommand(new CommandLine.HelpCommand());
        cl.setOut(out).setErr(err);
        cl.getSubcommands().get("engine").getCommandSpec().usageMessage()
                .width(120) // the emulator's option lines, unwrapped
                .footerHeading("%nThe emulator's options (in the file without the dashes, '_' for '-'; on the command"
                        + " line after --config, they win):%n")
                .footer(EngineCommand.emulatorOptionsHelp());
        cl.setParameterExceptionHandler((ex, a) -> {
            CommandLine c = ex.getCommandLine();
            String unknown = unknownCommand(ex);
            if (unknown != null) {
                err.println(c.getCommandName() + ": unknown command '" + unknown + "' (expected one of: "
                        + String.join(", ", c.getSubcommands().keySet()) + ")");
                err.println("Try '" + c.getCommandSpec().qualifiedName() + " --help'.");
                err.flush();
                return EXIT_BAD_INPUT;
            }
            err.println(c.getCommandName() + ": " + ex.getMessage().replaceAll("\\s*\\R\\s*", " "));
            err.println("Try '" + c.getCommandSpec().qualifiedName() + " --help'.");
            err.flush();
            return EXIT_BAD_INPUT;
        });
        cl.setExecutionExceptionHandler((ex, c, parseResult) -> {
            if (ex instanceof ConfigException config) {
                config.problems().stream().map(ConfigProblem::toString).forEach(err::println);
                err.flush();
                return EXIT_BAD_INPUT;
            }
            if (ex instanceof UsageException || ex instanceof ListenException || ex instanceof StartException) {
                err.println(c.getCommandName() + ": " + ex.getMessage());
                err.flush();
                return ex instanceof StartException ? EXIT_INTERNAL : EXIT_BAD_INPUT;
            }
            err.println(c.getCommandName() + ": internal error: " + ex);
            if (verbose(c.getCommand())) {
                ex.printStackTrace(err);
            }
            err.flush();
            return EXIT_INTERNAL;
        });
        return cl.execute(args);
    }

    /**
     * The word given where a command was expected ({@code sextant x}), or null: picocli reports it as an unmatched
     * argument of a command that has subcommands.
     */
    private static String unknownCommand(CommandLine.ParameterException ex) {
        if (!(ex instanceof CommandLine.UnmatchedArgumentException u) || u.getCommandLine().getSubcommands().isEmpty()
                || u.getUnmatched().isEmpty() || u.getUnmatched().get(0).startsWith("-")) {
            return null;
        }
        return u.getUnmatched().get(0); // a command with subcommands takes no other words
    }

    private static boolean verbose(Object command) {
        if (command instanceof SolveCommand s) {
            return s.common.verbose;
        }
        if (command instanceof ExplainCommand e) {
            return e.common.verbose;
        }
        return command instanceof CompareCommand c && c.common.verbose;
    }

    /** Without a command: print usage and report bad input. */
    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return EXIT_BAD_INPUT;
    }

    /**
     * {@code -V}: the version Maven built, from the jar's manifest, else from {@code version.properties}, which the
     * build fills in (so that classes run from the build's output directory say it too).
     */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"sextant " + version()};
        }

        static String version() {
            String v = Sextant.class.getPackage().getImplementationVersion();
            if (v != null) {
                return v;
            }
            try (java.io.InputStream in = Sextant.class.getResourceAsStream("version.properties")) {
                java.util.Properties p = new java.util.Properties();
                if (in != null) {
                    p.load(in);
                }
                v = p.getProperty("version");
            } catch (java.io.IOException e) {
                v = null;
            }
            return v == null || v.startsWith("${") ? "(version unknown: built without Maven)" : v;
        }
    }
}
