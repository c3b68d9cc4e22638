package dev.sextant.server.warmup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.server.gateway.GatewayConfig;
import java.time.Duration;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class WarmUpTest {
    private static final GatewayConfig REAL = GatewayConfig.defaults("east").withAddress("0.0.0.0", 8080);

    @Test
    void run_sendsEveryKindOfRequestThroughAThrowawayGateway_andAllAreAnswered() throws Exception {
        WarmUp.Result r = WarmUp.run(REAL, 1, Duration.ofMillis(1500));
        // every client sends its first request whatever the time; how many more depends on the machine, which a test
        // must not
        assertThat(r.requests()).as("a closed loop of %d clients", WarmUp.CLIENTS)
                .isGreaterThanOrEqualTo(WarmUp.CLIENTS);
        assertThat(r.failures()).isZero();
        assertThat(r.firstFailure()).isNull();
        assertThat(r.took()).isGreaterThanOrEqualTo(Duration.ofMillis(1500));
        assertThat(r.compilerMs()).as("a JVM that times its JIT").isGreaterThanOrEqualTo(0);
    }

    @Test
    void run_closesTheGatewayAndEngineItStarted() throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        WarmUp.run(REAL, 2, Duration.ofMillis(500));
        // not counted: the JDK's HTTP client ends its selector thread when the client is collected, not before, and
        // the shared pools end their threads once idle (the common pool's and Netty's global executor's)
        Set<String> left = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> !before.contains(t) && t.isAlive() && !t.getName().startsWith("HttpClient-")
                        && !t.getName().startsWith("ForkJoinPool.commonPool")
                        && !t.getName().startsWith("globalEventExecutor"))
                .map(Thread::getName).collect(Collectors.toSet());
        assertThat(left).as("threads the warm-up started and left running").isEmpty();
    }

    @Test
    void run_countsAndDescribesWhatTheGatewayRefuses_withoutThrowing() throws Exception {
        // the real gateway's limits are the throwaway one's: a body limit below the warm-up's requests refuses them
        WarmUp.Result r = WarmUp.run(REAL.withMaxBodyBytes(16), 1, Duration.ofMillis(500));
        assertThat(r.requests()).isPositive();
        assertThat(r.failures()).isEqualTo(r.requests());
        assertThat(r.firstFailure()).startsWith("413 ").contains("request_too_large");
    }

    @Test
    void settings_copyTheRealGatewaysRequestHandling_butNotItsAddressOrPeers() {
        GatewayConfig real = REAL.withMaxBodyBytes(1234).withTimeouts(Duration.ofSeconds(1), Duration.ofSeconds(2),
                Duration.ofSeconds(3), Duration.ofSeconds(4)).withHttp2(false, 7).withAccessLog(true).withBusyPoll(true)
                .withEngineKeepAlive(Duration.ofMillis(1500));
        GatewayConfig s = WarmUp.settings(real);
        assertThat(s.maxBodyBytes()).isEqualTo(1234);
        assertThat(s.firstTokenTimeout()).isEqualTo(Duration.ofSeconds(2));
        assertThat(s.totalTimeout()).isEqualTo(Duration.ofSeconds(4));
        assertThat(s.engineKeepAlive()).isEqualTo(Duration.ofMillis(1500));
        assertThat(s.http2()).isFalse();
        assertThat(s.maxConcurrentStreams()).isEqualTo(7);
        assertThat(s.busyPoll()).as("the event loops' code paths as the real gateway will run them").isTrue();
        assertThat(s.options()).isEqualTo(real.options());
        assertThat(s.clientLimits()).isEqualTo(real.clientLimits());
        assertThat(s.host()).isEqualTo("127.0.0.1");
        assertThat(s.port()).as("an ephemeral port, never the real one").isZero();
        assertThat(s.accessLog()).isFalse();
        assertThat(s.controlPlane()).isNull();
        assertThat(s.tls()).isNull();
        assertThat(s.engineToken()).isNull();
        assertThat(s.snapshotCache()).isNull();
    }

    @Test
    void run_refusesANonPositiveLength() {
        assertThatThrownBy(() -> WarmUp.run(REAL, 1, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("warm_up");
    }
}
