package dev.sextant.server.tenants;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.config.ConfigException;
import dev.sextant.config.ConfigProblem;
import dev.sextant.request.Narrowing;
import dev.sextant.request.Ticker;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The tenants file, key lookup by hash, and each tenant's limits on a hand-driven clock. */
class TenantsTest {
    private static final String KEY = "sk-test-1";

    @Test
    void find_byTheHashOfTheBearerKey_only() throws Exception {
        Tenants t = Tenants.parse("tenants:\n  acme:\n    keys: [" + ApiKeys.hash(KEY) + ", " + ApiKeys.hash("sk-2")
                + "]\n    residency: [eu-west]\n    max_priority: 3\n", "tenants.yaml");
        assertThat(t.find("Bearer " + KEY).name()).isEqualTo("acme");
        assertThat(t.find("bearer  sk-2 ").name()).isEqualTo("acme");
        assertThat(t.find("Bearer " + KEY).residency()).containsExactly("eu-west");
        assertThat(t.find("Bearer " + KEY).maxPriority()).isEqualTo(3);
        for (String wrong : new String[] {null, "", KEY, "Bearer", "Bearer ", "Basic " + KEY, "Bearer " + KEY + "x",
                "Bearer " + ApiKeys.hash(KEY)}) {
            assertThat(t.find(wrong)).as(String.valueOf(wrong)).isNull();
        }
    }

    @Test
    void defaults_restrictNothing() throws Exception {
        Tenant t = Tenants.parse("tenants: {a: {keys: [" + ApiKeys.hash(KEY) + "]}}", "t.yaml").all().get(0);
        assertThat(t.models()).isNull();
        assertThat(t.residency()).isNull();
        assertThat(t.maxPriority()).isEqualTo(Narrowing.NO_CEILING);
        assertThat(t.weight()).isEqualTo(1.0);
        assertThat(t.allows("any-model")).isTrue();
    }

    @Test
    void problems_nameFileLineAndField_andNeverShowAKey() {
        String yaml = "tenants:\n"
                + "  a:\n"
                + "    keys: [" + KEY + "]\n"
                + "    default_residency: [us-east]\n"
                + "    residency: [eu-west]\n"
                + "  b:\n"
                + "    keys: [" + ApiKeys.hash("k") + "]\n"
                + "    weight: 0\n"
                + "  c:\n"
                + "    keys: [" + ApiKeys.hash("k") + "]\n"
                + "    colour: red\n";
        assertThatThrownBy(() -> Tenants.parse(yaml, "tenants.yaml")).isInstanceOfSatisfying(ConfigException.class, e -> {
            List<String> lines = e.problems().stream().map(ConfigProblem::toString).toList();
            assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("tenants.yaml:3: tenants.a.keys[0]: not a hashed key"))
                    .anySatisfy(l -> assertThat(l).startsWith("tenants.yaml:10: tenants.c.keys[0]: the same key as tenant 'b'"))
                    .anySatisfy(l -> assertThat(l).startsWith("tenants.yaml:11: tenants.c.colour: unknown key"));
            assertThat(String.join("\n", lines)).doesNotContain(KEY);
        });
    }

    @Test
    void limitsAndWeights_beyondWhatAClientCanBeToldOrASumHolds_areProblems() {
        String yaml = "tenants:\n"
                + "  a:\n"
                + "    keys: [" + ApiKeys.hash("a") + "]\n"
                + "    limits: {requests_per_second: 1e-300}\n"
                + "  b:\n"
                + "    keys: [" + ApiKeys.hash("b") + "]\n"
                + "    weight: 1e300\n"
                + "  c:\n"
                + "    keys: [" + ApiKeys.hash("c") + "]\n"
                + "    weight: 1e6\n"
                + "    limits: {requests_per_second: 0.0001}\n";
        assertThatThrownBy(() -> Tenants.parse(yaml, "tenants.yaml")).isInstanceOfSatisfying(ConfigException.class, e -> {
            List<String> lines = e.problems().stream().map(ConfigProblem::toString).toList();
            assertThat(lines).hasSize(2)
                    .anySatisfy(l -> assertThat(l).startsWith("tenants.yaml:4: tenants.a.limits.requests_per_second: "
                            + "1.0E-300 (expected: 0 for no limit, or a number of at least 1/86400"))
                    .anySatisfy(l -> assertThat(l).startsWith("tenants.yaml:7: tenants.b.weight: 1.0E300 (expected: a"
                            + " number > 0, at most 1000000)"));
        });
    }

    @Test
    void limits_refuseTheExcessAtOnce_andRefillWithTime() {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        Ticker ticker = now::get;
        TenantLimits limits = new TenantLimits(ticker);
        Tenant t = new Tenant("a", null, null, null, Narrowing.NO_CEILING, Integer.MIN_VALUE, 1, 2, 600, 3);
        assertThat(limits.take(t, 100)).isNull();
        assertThat(limits.take(t, 100)).isNull();
        TenantLimits.Refusal r = limits.take(t, 100);
        assertThat(r.limit()).isEqualTo("requests_per_second");
        assertThat(r.message()).isEqualTo("tenant 'a' is over its limit of 2 requests per second");
        assertThat(r.retryAfterNanos()).isEqualTo(500_000_000L); // one request at 2 a second
        now.addAndGet(500_000_000L);
        assertThat(limits.take(t, 100)).isNull(); // 3 in flight now: the concurrency limit
        now.addAndGet(1_000_000_000L);
        assertThat(limits.take(t, 100).limit()).isEqualTo("concurrent_requests");
        limits.release(t);
        assertThat(limits.inFlight("a")).isEqualTo(2);
        TenantLimits.Refusal tokens = limits.take(t, 400); // 600 a minute, 10 a second: 300 used, 15 back in 1.5 s
        assertThat(tokens.limit()).isEqualTo("tokens_per_minute");
        assertThat(tokens.retryAfterNanos()).isEqualTo(8_500_000_000L); // 85 tokens missing at 10 a second
        assertThat(limits.take(t, 300)).isNull();
    }
}
