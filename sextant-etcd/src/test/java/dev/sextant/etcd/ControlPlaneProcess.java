package dev.sextant.etcd;

import dev.sextant.server.control.ControlPlane;
import dev.sextant.server.control.ControlPlaneConfig;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * A control plane over etcd in a process of its own, so that a test can stop it with SIGSTOP and resume it with
 * SIGCONT as an operating system would pause it (EtcdFaultsIT). Arguments: the topology file, the etcd prefix, then the
 * etcd members' URLs. Prints {@code listening <url>} once it listens; runs until killed.
 */
public final class ControlPlaneProcess {
    private ControlPlaneProcess() {
    }

    public static void main(String[] args) throws Exception {
        List<URI> endpoints = Arrays.stream(args).skip(2).map(URI::create).toList();
        EtcdOptions o = EtcdOptions.of(endpoints).withPrefix(args[1]).withLeaseTtl(Duration.ofSeconds(2));
        ControlPlane cp = ControlPlane.start(EtcdFaultsIT.config(Path.of(args[0])), Etcd.leadership(o),
                Etcd.registry(o));
        System.out.println("listening " + cp.uri());
        System.out.flush();
        Thread.currentThread().join();
    }

    /** Starts one, with this JVM's class path; its output goes to {@code log}. */
    static Process start(Path topology, EtcdOptions o, Path log) throws java.io.IOException {
        List<String> cmd = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-cp", System.getProperty("java.class.path"), ControlPlaneProcess.class.getName(),
                topology.toString(), o.prefix()));
        o.endpoints().forEach(u -> cmd.add(u.toString()));
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }
}
