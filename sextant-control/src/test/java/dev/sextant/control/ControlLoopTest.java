package dev.sextant.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.sextant.topology.Engine;
import dev.sextant.topology.EngineCluster;
import dev.sextant.topology.GatewayCluster;
import dev.sextant.topology.Model;
import dev.sextant.topology.Topology;
import dev.sextant.topology.TrafficClass;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The control loop's behaviour against fake engines of known truth, under a manual clock. */
class ControlLoopTest {
    /** An h100-like engine serving chat: 64 sequences, 120 output tokens, 300 uncached prompt tokens. */
    static final Batching H100 = new Batching(5, 0.03, 6e-6, 0, 0.006, 1, 64, 120, 300);

    /** Four engines near the gateway, four 40 ms away, each configured as {@code truth} rated {@code factor}. */
    static Topology fleet(Map<String, Batching> truths, Map<String, Double> factors, double demand) {
        List<Engine> es = new ArrayList<>();
        truths.forEach((id, b) -> es.add(Rig.configured(id, id.startsWith("e") ? "gpu" : "far", H100,
                factors.getOrDefault(id, 1.0))));
        Map<String, Map<String, Double>> rtt = new LinkedHashMap<>();
        rtt.put("gw", truths.keySet().stream().anyMatch(id -> id.startsWith("f")) ? Map.of("gpu", 2.0, "far", 40.0)
                : Map.of("gpu", 2.0));
        return new Topology(List.of(new GatewayCluster("gw", "r1")),
                List.of(new EngineCluster("gpu", "r1"), new EngineCluster("far", "r2")), rtt,
                List.of(new Model("m", 120)), es, List.of(new TrafficClass("chat", "m", List.of(), 0)),
                Map.of("gw", Map.of("chat", demand)), 0.1, 25);
    }

    static Map<String, Batching> truths(Map<String, Batching> exceptions) {
        Map<String, Batching> t = new LinkedHashMap<>();
        for (String id : List.of("e1", "e2", "e3", "e4", "f1", "f2", "f3", "f4")) {
            t.put(id, exceptions.getOrDefault(id, H100));
        }
        return t;
    }

    static Rig rig(Map<String, Batching> exceptions, Map<String, Double> factors, double demand, long seed) {
        Map<String, Batching> t = truths(exceptions);
        return new Rig(fleet(t, factors, demand), t, seed);
    }

    @Test
    void noEvidence_estimatesAreTheConfiguration_andTheFirstStepPublishes() {
        Rig r = rig(Map.of(), Map.of(), 150, 1);

        assertThat(r.steps.get(0).published()).isTrue();
        assertThat(r.steps.get(0).reason()).isEqualTo("first snapshot");
        EngineEstimate e = r.estimate("e1");
        Engine configured = r.topology.engines().get(0);
        assertThat(e.condition()).isEqualTo(Condition.HEALTHY);
        assertThat(e.capacityRps()).isEqualTo(configured.capacityRps());
        assertThat(e.profile()).isEqualTo(configured.profile());
        assertThat(e.capacityWhy()).contains("as configured (no evidence yet)");
    }

    @Test
    void correctRating_capacityAndProfileStayWithinTenPercentOfTheTruth() {
        Rig r = rig(Map.of(), Map.of(), 150, 2);
        r.run(600);

        EngineEstimate e = r.estimate("e1");
        double mu = H100.saturation();
        assertThat(e.capacityRps()).isCloseTo(mu, within(0.1 * mu));
        double load = r.loads().get("e1");
        assertThat(e.profile().tbtMs(load / e.capacityRps())).isCloseTo(H100.tbt(load), within(0.1 * H100.tbt(load)));
    }

    /**
     * With evidence, the estimated profile follows the concave start of TTFT (an idle engine starts a step at once, a
     * busy one makes an arrival wait half a step), so its value at no load lies above the idle TTFT; the idle TTFT is
     * kept apart, for the overload bound, and is the laws' own at no load.
     */
    @Test
    void estimatedProfile_startsOnTheLineOfLightLoad_andKeepsTheIdleTtftApart() {
        Rig r = rig(Map.of(), Map.of(), 150, 2);
        r.run(600);

        EngineEstimate e = r.estimate("e1");
        assertThat(e.evidence()).isGreaterThan(0.5);
        assertThat(e.idleTtftMs()).as("the idle TTFT, below the profile's value at no load")
                .isLessThan(e.profile().ttftMs(0));
        double lightest = e.profile().ttftMs(0.1);
        assertThat(e.profile().ttftMs(0)).as("on the line of the lightest loads, not above them")
                .isLessThanOrEqualTo(lightest);
        assertThat(e.idleTtftMs()).as("no more than half a step below the light load's TTFT")
                .isGreaterThan(lightest - e.profile().tbtMs(0.1));
    }

    @Test
    void slowEngine_isFoundWithinOneScrape_pricedSlower_andRecoversOnlyWhenFastAgain() {
        Rig r = rig(Map.of(), Map.of(), 150, 3);
        r.run(120);
        double before = r.estimate("e2").capacityRps();
        r.engines.get("e2").slowdown(4);
        r.run(5);

        EngineEstimate slow = r.estimate("e2");
        assertThat(slow.condition()).isEqualTo(Condition.SLOW);
        assertThat(slow.slowdown()).isBetween(3.0, 5.0);
        assertThat(slow.capacityRps()).isLessThan(before / 2.5);
        assertThat(slow.conditionWhy()).contains("slower than its group").contains("recovers below");
        assertThat(r.loop.canariesDue()).as("a slow engine keeps getting canaries, its evidence of recovery")
                .isNotNull();

        r.run(120);
        assertThat(r.estimate("e2").condition()).as("still 4× slow: stays penalized").isEqualTo(Condition.SLOW);

        r.engines.get("e2").slowdown(1);
        r.run(30);
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.HEALTHY);
        assertThat(r.estimate("e2").capacityRps()).isCloseTo(before, within(0.15 * before));
    }

    /**
     * An engine kept full by a backlog while it runs 4× slow serves a quarter of what it carries, and that count is
     * its capacity while it is slow. Once it is fast again the count describes an engine that is no longer there: its
     * capacity returns to its laws, and a fleet with room sheds nothing.
     */
    @Test
    void slowEngineUnderABacklog_isNotHeldAtWhatItServedSlow_onceFastAgain() {
        double mu = H100.saturation();
        Rig r = rig(Map.of(), Map.of(), 4 * mu, 21);
        r.run(60);
        r.demand = 1.2 * 8 * mu; // more than the fleet carries: every engine full, a backlog on each
        r.engines.get("e1").slowdown(4);
        r.run(120);
        EngineEstimate slow = r.estimate("e1");
        assertThat(slow.condition()).isEqualTo(Condition.SLOW);
        assertThat(slow.capacityWhy()).as("its capacity measured while slow").contains("served while a backlog kept it full");
        assertThat(slow.capacityRps()).isLessThan(0.4 * mu);

        r.engines.get("e1").slowdown(1);
        r.demand = 0.6 * 8 * mu;
        r.run(60);
        EngineEstimate fast = r.estimate("e1");
        assertThat(fast.condition()).isEqualTo(Condition.HEALTHY);
        assertThat(fast.capacityRps()).as(fast.capacityWhy()).isCloseTo(mu, within(0.15 * mu));
        assertThat(r.loop.published().objective().shedRps()).isZero();
    }

    @Test
    void slowEngine_changesThePublishedWeightsInTheNextStep() {
        Rig r = rig(Map.of(), Map.of(), 150, 4);
        r.run(120);
        double before = r.loads().get("e2");
        int steps = r.steps.size();
        r.engines.get("e2").slowdown(4);
        r.run(10);

        assertThat(r.publicationsSince(steps)).isPositive();
        assertThat(r.loads().get("e2")).isLessThan(before / 2);
    }

    @Test
    void wholeClusterSlow_isPricedSlower_notPenalized_andTrafficMovesToTheOtherCluster() {
        Rig r = rig(Map.of(), Map.of(), 150, 4);
        r.run(120);
        double near = 0;
        for (String e : List.of("e1", "e2", "e3", "e4")) {
            near += r.loads().get(e);
        }
        int steps = r.steps.size();
        for (String e : List.of("e1", "e2", "e3", "e4")) {
            r.engines.get(e).slowdown(4);
        }
        r.run(60);

        double nearAfter = 0;
        for (String e : List.of("e1", "e2", "e3", "e4")) {
            nearAfter += r.loads().get(e);
            assertThat(r.estimate(e).condition()).as("a cluster slow as a whole is load, not a fault of one engine")
                    .isEqualTo(Condition.HEALTHY);
        }
        assertThat(r.publicationsSince(steps)).isPositive();
        assertThat(nearAfter).as("near before: %.1f req/s", near).isLessThan(0.8 * near);
        // four times slower decoding, estimated from the refitted law of their group
        assertThat(r.estimate("e1").profile().tbtMs(0.2)).isGreaterThan(3 * H100.tbt(0.2 * H100.saturation()));
    }

    /**
     * Three engines of a group of four slow down: their pace is now the group's median, and the one still fast is
     * "clearly faster" than it. Its speed factor must stay its own pace against the law, not run away: stale factors
     * of the slow engines (no traffic since they were priced out) once made the median, the law learned from the fast
     * engine scaled by that median at every interval, and its capacity grew without end (to 18× the truth in the
     * simulator), so the plan filled it until it queued.
     */
    @Test
    void mostOfAGroupSlow_theEngineStillFast_isPricedAtItsOwnPace_notFaster() {
        Rig r = rig(Map.of(), Map.of(), 150, 6);
        r.run(120);
        for (String e : List.of("e1", "e2", "e3")) {
            r.engines.get(e).slowdown(4);
        }
        double mu = H100.saturation();
        for (int s = 0; s < 300; s += 10) {
            r.run(10);
            assertThat(r.estimate("e4").capacityRps()).as("e4 at %d s: %s", s + 10, r.estimate("e4").speedWhy())
                    .isLessThan(1.25 * mu);
        }
        assertThat(r.estimate("e4").capacityRps()).isCloseTo(mu, within(0.15 * mu));
        for (String e : List.of("e1", "e2", "e3")) {
            assertThat(r.estimate(e).capacityRps()).as(e).isLessThan(mu / 2.5);
        }
    }

    /** An a100-like engine with long answers: 48 sequences, 400 output tokens, 1,200 uncached prompt tokens. */
    static final Batching LONG_ANSWERS = new Batching(7, 0.045, 9e-6, 0, 0.009, 1, 48, 400, 1200);

    /**
     * One engine of a group of three slows down eightfold. With long answers it finishes a few requests a scrape, so
     * its factor is judged (on ten finished requests) several intervals after its token gaps show the slowness; those
     * intervals read it many times slower than its group, and taught to the group's laws as observed they made the
     * least-squares fit of the step law explain the group's steps as prefill alone or as a slope many times the truth:
     * its two healthy peers were priced at a third of their capacity, or read 20× slow against the law's steps of
     * nothing and their group's laws started again. Each seed's slow-down is met at a different point of its traffic.
     */
    @Test
    void oneEngineSlowingDown_beforeItIsJudged_doesNotTeachItsPaceToTheLawsOfItsHealthyPeers() {
        double mu = LONG_ANSWERS.saturation();
        for (long seed = 1; seed <= 3; seed++) {
            Rig r = threeNearThreeFar(LONG_ANSWERS, 0.8 * 3 * mu, seed);
            r.run(120);
            r.engines.get("e1").slowdown(8);
            for (int s = 0; s < 120; s += 5) {
                r.run(5);
                for (String e : List.of("e2", "e3")) {
                    EngineEstimate healthy = r.estimate(e);
                    assertThat(healthy.capacityRps()).as("seed %d, %s at %d s: %s", seed, e, s + 5,
                            healthy.capacityWhy()).isCloseTo(mu, within(0.25 * mu));
                }
            }
            assertThat(r.estimate("e1").condition()).as("seed %d", seed).isEqualTo(Condition.SLOW);
            assertThat(r.estimate("e2").capacityWhy())
                    .as("seed %d: one engine of three is no change of the group's pace", seed)
                    .doesNotContain("its laws started again");
        }
    }

    /** Engines e1–e3 near the gateway and f1–f3 40 ms away, all of truth {@code b} and configured as it is. */
    private static Rig threeNearThreeFar(Batching b, double demand, long seed) {
        Map<String, Batching> truths = new LinkedHashMap<>();
        List<Engine> es = new ArrayList<>();
        for (String id : List.of("e1", "e2", "e3", "f1", "f2", "f3")) {
            truths.put(id, b);
            es.add(Rig.configured(id, id.startsWith("e") ? "gpu" : "far", b, 1));
        }
        Topology t = new Topology(List.of(new GatewayCluster("gw", "r1")),
                List.of(new EngineCluster("gpu", "r1"), new EngineCluster("far", "r2")),
                Map.of("gw", Map.of("gpu", 2.0, "far", 40.0)), List.of(new Model("m", (int) b.outputTokens())), es,
                List.of(new TrafficClass("chat", "m", List.of(), 0)), Map.of("gw", Map.of("chat", demand)), 0.1, 25);
        return new Rig(t, truths, seed);
    }

    /**
     * A whole cluster slows down, its traffic moves to the other, and it is fast again. Nothing sends it traffic, so
     * only canaries can show that it is: an engine whose speed has not been judged for a minute gets them, as a slow
     * one does, and the cluster gets its traffic back.
     */
    @Test
    void wholeClusterSlowThenFastAgain_getsItsTrafficBack() {
        Rig r = rig(Map.of(), Map.of(), 150, 7);
        r.run(120);
        double near = nearLoad(r);
        for (String e : List.of("e1", "e2", "e3", "e4")) {
            r.engines.get(e).slowdown(4);
        }
        r.run(120);
        assertThat(nearLoad(r)).as("slow: near before %.1f req/s", near).isLessThan(0.5 * near);
        for (String e : List.of("e1", "e2", "e3", "e4")) {
            r.engines.get(e).slowdown(1);
        }
        r.run(180);
        assertThat(nearLoad(r)).as("fast again: near before %.1f req/s; %s", near, r.estimate("e1").speedWhy())
                .isGreaterThan(0.7 * near);
        assertThat(r.estimate("e1").capacityWhy()).as("the explanation says the laws started again")
                .contains("its laws started again").contains("the step time they had learned");
    }

    /**
     * Engines the plan sends nothing get a canary once their speed has gone a minute without a judgement. A canary
     * can lift an engine's factor (here: found four times faster than its law) but never condemn it: one request's
     * steps share the batch with other requests' prefill, and slowness is judged on traffic.
     */
    @Test
    void anEngineWithoutTraffic_isLiftedByCanaries_butNotCondemnedByThem() {
        Rig r = rig(Map.of(), Map.of(), 10, 8);
        r.run(120);
        assertThat(r.loads().get("f1")).as("light demand stays near").isZero();
        assertThat(r.loads().get("f2")).isZero();
        r.engines.get("f1").slowdown(4);
        r.engines.get("f2").slowdown(0.25);
        r.run(180);

        EngineEstimate condemned = r.estimate("f1");
        assertThat(condemned.condition()).as(condemned.speedWhy()).isEqualTo(Condition.HEALTHY);
        assertThat(condemned.slowdown()).isLessThan(1.5);
        EngineEstimate lifted = r.estimate("f2");
        assertThat(lifted.slowdown()).as(lifted.speedWhy()).isLessThan(0.5);
        assertThat(r.loads().get("f2")).as("lifted, it is planned, and its traffic judges it since").isPositive();
    }

    /**
     * Every engine runs three times faster than configured, and the far group gets no traffic: its engines are judged
     * by canaries alone, against the law it was configured with, and one reads 1.6 times slower than its steps are
     * (one client-timed answer). Its canary lifts its factor from the configured 1 to about 0.5, 1.6 times its peers'
     * 0.33: not evidence that it is slower than they are, since a canary never condemns.
     */
    @Test
    void anEngineLiftedByACanary_isNotSlowerThanItsGroupForIt() {
        Rig r = rig(Map.of(), Map.of(), 10, 8);
        r.engines.values().forEach(e -> e.slowdown(1 / 3.0));
        r.engines.get("f1").canaryReads(1.6);
        for (int t = 0; t < 300; t += 5) {
            r.run(5);
            EngineEstimate f1 = r.estimate("f1");
            assertThat(f1.condition()).as("at %d s: %s", t + 5, f1.conditionWhy()).isEqualTo(Condition.HEALTHY);
        }
        assertThat(r.loads().get("f1")).as("light demand stays near").isZero();
        EngineEstimate f1 = r.estimate("f1");
        assertThat(f1.speedWhy()).as("judged by its canaries").startsWith("canary TBT");
        assertThat(f1.slowdown()).as("lifted").isLessThan(0.6);
        assertThat(r.estimate("f2").slowdown()).as("its peers, lifted by theirs").isLessThan(0.4);
        assertThat(r.estimate("f2").capacityWhy()).as("a factor below 1 said as what it is")
                .containsPattern("; [0-9.]+× faster than its group's law;").doesNotContain("slower");
    }

    private static double nearLoad(Rig r) {
        double near = 0;
        for (String e : List.of("e1", "e2", "e3", "e4")) {
            near += r.loads().get(e);
        }
        return near;
    }

    @Test
    void hugePrompt_penalizesNothing() {
        Rig r = rig(Map.of(), Map.of(), 150, 5);
        r.run(120);
        r.hugePromptEngine = "e1";
        r.hugePromptTokens = 131_072;
        r.run(30);

        r.loop.estimates().engines().values().forEach(e -> assertThat(e.condition()).as(e.engine())
                .isEqualTo(Condition.HEALTHY));
    }

    /**
     * A topology whose demand is twice what its engines carry: before any gateway reports, that demand is a forecast,
     * and the first snapshot routes what the engines carry of it and refuses nothing; with {@code demand: configured}
     * the operator's figure is the demand, and it sheds.
     */
    @Test
    void demandNoGatewayHasReported_isNotShed_butConfiguredDemandIs() {
        Topology t = Fleets.oneCluster(2, 50, 400);
        Step forecast = ControlLoop.create(t, ControlOptions.defaults(), () -> 0L, null).step();
        assertThat(forecast.published()).isTrue();
        assertThat(forecast.snapshot().route("gw", "chat").shedFraction()).isZero();
        // the four engines' effective capacity, 4 × 50 × 0.9, is 45% of the forecast
        assertThat(forecast.reason()).contains("not shed on demand that no gateway has reported yet: planned for 45% of"
                + " the topology's");

        Step configured = ControlLoop.create(t, ControlOptions.defaults().withObservedDemand(false), () -> 0L, null)
                .step();
        assertThat(configured.snapshot().route("gw", "chat").shedFraction()).isGreaterThan(0.5);
    }

    @Test
    void burstOfConcurrentStreams_penalizesNothing_andShedsNothingAfterwards() {
        Rig r = rig(Map.of(), Map.of(), 150, 6);
        r.run(120);
        r.burstArrivals = 1_500;
        r.run(30);

        r.loop.estimates().engines().values().forEach(e -> assertThat(e.condition()).as(e.engine())
                .isEqualTo(Condition.HEALTHY));
        assertThat(r.loop.published().route("gw", "chat").shedFraction()).isZero();
        assertThat(r.loop.estimates().demand().get("gw").get("chat").rps()).isCloseTo(150, within(20.0));
    }

    @Test
    void failingEngine_goesOutOfService_andBackOnlyAfterEnoughCanaries() {
        Rig r = failing();
        assertThat(r.estimate("e3").condition()).isEqualTo(Condition.FAILING);
        assertThat(r.estimate("e3").health()).isZero();
        assertThat(r.loads().get("e3")).isZero();
        r.run(60);
        assertThat(r.estimate("e3").condition()).as("canaries still fail half the time").isEqualTo(Condition.FAILING);

        r.errorRate.remove("e3");
        r.run(5 * (EngineTracker.canariesToRecover(0.2) + 2));
        assertThat(r.estimate("e3").condition()).isEqualTo(Condition.HEALTHY);
        assertThat(r.loads().get("e3")).isPositive();
    }

    @Test
    void anEngineFailingEverything_thatTheGatewaysEject_isFailing_onTheFewAttemptsTheySendIt() {
        Rig r = rig(Map.of(), Map.of(), 150, 7);
        r.run(60);
        // the fault starts within a report: its successes end any run of failures, and the gateway ejects the engine
        outcomes(r, "e3", 20, 5);
        r.ejected.add("e3");
        r.run(30);
        assertThat(r.estimate("e3").condition()).as("5 failures among 100 recent attempts").isEqualTo(Condition.HEALTHY);
        // the ejection ends; five more failures, none answered: a run of five, and its recent attempts a third failed
        outcomes(r, "e3", 0, 5);
        assertThat(r.estimate("e3").condition()).as(r.estimate("e3").conditionWhy()).isEqualTo(Condition.FAILING);
        assertThat(r.estimate("e3").conditionWhy()).contains("the last 5 in a row");
    }

    @Test
    void failuresInARow_judgeNothing_whenASuccessCameBetween_orThePeersFailAlike() {
        // ejected for a minute: its older attempts forgotten, fewer than minAttempts recent ones from then on
        Rig between = rig(Map.of(), Map.of(), 150, 7);
        between.run(60);
        between.ejected.add("e3");
        between.run(60);
        outcomes(between, "e3", 0, 4);
        outcomes(between, "e3", 1, 0);
        outcomes(between, "e3", 0, 4);
        assertThat(between.estimate("e3").condition()).as("runs of 4 and 4").isEqualTo(Condition.HEALTHY);
        outcomes(between, "e3", 0, 1);
        assertThat(between.estimate("e3").condition()).as("then a run of 5").isEqualTo(Condition.FAILING);

        Rig alike = rig(Map.of(), Map.of(), 150, 7);
        alike.run(60);
        alike.ejected.addAll(alike.engines.keySet());
        alike.run(30);
        for (String e : alike.engines.keySet()) {
            outcomes(alike, e, 0, 5);
        }
        assertThat(alike.estimate("e3").condition()).as("every engine fails alike: upstream, not the engine")
                .isEqualTo(Condition.HEALTHY);
    }

    /** A gateway's report of the last 5 s on {@code engine} alone: {@code ok} answers and {@code failed} HTTP 500s. */
    private static void outcomes(Rig r, String engine, long ok, long failed) {
        GatewayReport.Mean none = GatewayReport.Mean.NONE;
        r.loop.observe(new GatewayReport("gw", "", r.ticker.nanos(), 5, Map.of("chat", 750L), Map.of(engine,
                new GatewayReport.EngineOutcomes(ok + failed, ok, 0, 0, failed, 0, none, none, none, none, 0, 0)),
                Map.of()));
    }

    @Test
    void failingEngine_recoversWithinSecondsOnceItsCanariesSucceed_whenTheDriverAsksOften() {
        Rig r = failing();
        assertThat(r.estimate("e3").condition()).isEqualTo(Condition.FAILING);

        // fixed: a driver that asks every second (the control plane's tick) gets the next canary as soon as one is back
        int k = EngineTracker.canariesToRecover(0.2);
        int sent = 0;
        int s = 0;
        for (; s < 5 + k + 1 && r.estimate("e3").condition() == Condition.FAILING; s++) {
            r.ticker.advanceSeconds(1);
            for (Canary c : r.loop.canariesDue()) {
                if (c.engine().equals("e3")) {
                    sent++;
                    r.loop.observe(CanaryResult.ok("e3", r.ticker.nanos(), 10, 5));
                }
            }
        }
        assertThat(r.estimate("e3").condition()).as("after %d canaries", sent).isEqualTo(Condition.HEALTHY);
        assertThat(s).as("seconds: the canary interval, then one canary a second").isLessThanOrEqualTo(5 + k);
    }

    @Test
    void busyEngine_thatStartsFailing_isFoundOnTheNextReport_notDilutedByItsPastSuccesses() {
        Rig r = rig(Map.of(), Map.of(), 150, 7);
        r.run(60);
        r.errorRate.put("e3", 0.3);
        r.run(5);

        assertThat(r.estimate("e3").condition()).as(r.estimate("e3").conditionWhy()).isEqualTo(Condition.FAILING);
    }

    /**
     * Demand at 85% of the fleet's saturation: without the engine that fails a quarter of its attempts, the others would
     * run beyond where their TTFT doubles, so the loop plans it as capacity of last resort, its capacity counted at
     * the share that succeeds (the snapshot's penalty, which tells the gateways not to eject it for those errors).
     */
    @Test
    void failingEngine_isCapacityOfLastResort_whenTheOthersWouldRunHotWithoutIt() {
        Rig r = quarterFailing(HOT, false);
        // out of service when found failing: the attempts that found it straddle the fault's start; planned once its
        // canaries show, with confidence, that fewer than half of its attempts fail
        assertThat(r.loads().get("e3")).isZero();
        int s = 0;
        for (; s < 180 && r.loads().get("e3") == 0; s++) {
            r.run(1);
        }
        assertThat(s).as("seconds of canaries before it is planned").isBetween(5, 179);

        assertThat(r.estimate("e3").condition()).isEqualTo(Condition.FAILING);
        assertThat(r.loads().get("e3")).isPositive();
        assertThat(r.loop.published().engines().get("e3").penalty()).as(r.estimate("e3").conditionWhy())
                .isBetween(0.5, 0.95);
        assertThat(r.estimate("e3").health()).isEqualTo(1);
        // in the plan, the gateways' attempts join its canaries: the share that succeeds settles at the truth's
        r.run(60);
        assertThat(r.loop.published().engines().get("e3").penalty()).isCloseTo(0.75, within(0.05));
        assertThat(r.estimate("e3").conditionWhy()).contains("planned as capacity of last resort, at the 7");
        assertThat(r.steps.stream().map(Step::reason).toList()).anySatisfy(why -> assertThat(why)
                .contains("e3 failing, planned as capacity of last resort").contains("priced with their retries"));

        // fixed: back to full health once its canaries succeed, and the gateways told its errors are no longer expected
        r.errorRate.remove("e3");
        r.run(5 * (EngineTracker.canariesToRecover(0.2) + 2));
        assertThat(r.estimate("e3").condition()).isEqualTo(Condition.HEALTHY);
        assertThat(r.loop.published().engines().get("e3").penalty()).isEqualTo(1);
    }

    @Test
    void failingEngine_staysOutOfService_whenTheOthersHaveRoom_orWhenItHangs() {
        // at 150 req/s the other seven engines have room
        Rig room = quarterFailing(150, false);
        assertThat(room.estimate("e3").condition()).isEqualTo(Condition.FAILING);
        assertThat(room.loads().get("e3")).isZero();

        // a request sent to a hung engine waits the whole timeout: never worth planning, however hot the others run
        Rig hung = quarterFailing(HOT, true);
        assertThat(hung.estimate("e3").condition()).isEqualTo(Condition.FAILING);
        assertThat(hung.loads().get("e3")).isZero();
    }

    @Test
    void lastResort_needsFewerThanHalfOfItsAttemptsFailing_withConfidence() {
        // a third of 20 recent attempts, some from before a fault that fails every request since: not evidence
        assertThat(DefaultControlLoop.errorRateUpper(7, 20)).isGreaterThan(0.5);
        // a quarter of the hundreds an engine in the plan gets: a last resort
        assertThat(DefaultControlLoop.errorRateUpper(75, 300)).isBetween(0.25, 0.5);
        // the bound is above the rate seen, and narrows toward it with the evidence
        for (int n : new int[] {1, 10, 100, 1_000, 10_000}) {
            for (double p : new double[] {0, 0.2, 0.5, 1}) {
                double upper = DefaultControlLoop.errorRateUpper(p * n, n);
                assertThat(upper).as("%s of %d", p, n).isBetween(p, 1.0 + 1e-12);
                assertThat(upper - p).isLessThanOrEqualTo(2.5 / Math.sqrt(n));
            }
        }
    }

    /** 85% of the saturation of {@link #rig}'s eight engines, req/s. */
    private static final double HOT = 0.85 * 8 * H100.saturation();

    /** Engines as {@link #rig} at {@code demand}, a quarter of e3's attempts failing (timing out if it {@code hangs}). */
    private static Rig quarterFailing(double demand, boolean hangs) {
        Rig r = rig(Map.of(), Map.of(), demand, 7);
        r.run(60);
        if (hangs) {
            r.hangs.add("e3");
        }
        r.errorRate.put("e3", 0.25);
        r.run(20);
        return r;
    }

    /** Engines as {@link #rig} with half of e3's attempts failing for the last 20 s. */
    private static Rig failing() {
        Rig r = rig(Map.of(), Map.of(), 150, 7);
        r.run(60);
        r.errorRate.put("e3", 0.5);
        r.run(20);
        return r;
    }

    @Test
    void crashedEngine_isNotFailingForTheConnectionsRefusedWhileItWasDown() {
        Rig r = crashed(20);
        assertThat(r.estimate("e1").condition()).isEqualTo(Condition.DOWN);

        // back: its scrape answers first, then a gateway's report about the seconds before, every attempt refused
        r.noMetrics.remove("e1");
        r.errorRate.remove("e1");
        r.run(5);
        refused(r, "e1", 100);
        assertThat(r.estimate("e1").condition()).isEqualTo(Condition.HEALTHY);

        // refused connections reported after it came back are faults again
        r.ticker.advanceSeconds(6);
        refused(r, "e1", 100);
        assertThat(r.estimate("e1").condition()).isEqualTo(Condition.FAILING);
    }

    @Test
    void linkFailingMidInterval_isCutOnTheNextInterval_andItsRefusedConnectionsAreNotTheEngines() {
        Rig r = rig(Map.of(), Map.of(), 150, 9);
        r.run(60);
        // the gateway's link to the far cluster fails during an interval: every far engine answered some attempts and
        // then refused the rest, while their scrapes still answer
        Map<String, GatewayReport.EngineOutcomes> mixed = new TreeMap<>();
        for (String f : List.of("f1", "f2", "f3", "f4")) {
            mixed.put(f, outcomes(40, 10, 30));
        }
        r.ticker.advanceSeconds(5);
        report(r, mixed);
        assertThat(r.loop.estimates().links().get("gw").get("far").reachable()).isTrue();
        for (String f : List.of("f1", "f2", "f3", "f4")) {
            assertThat(r.estimate(f).condition()).as(f).isEqualTo(Condition.HEALTHY);
        }

        // the gateway has ejected them: the next interval has a few attempts, every one refused, no success
        r.ticker.advanceSeconds(5);
        report(r, Map.of("f1", outcomes(2, 0, 2), "f3", outcomes(1, 0, 1)));
        LinkEstimate far = r.loop.estimates().links().get("gw").get("far");
        assertThat(far.reachable()).isFalse();
        assertThat(far.why()).contains("cut");
        for (String f : List.of("f1", "f2", "f3", "f4")) {
            assertThat(r.estimate(f).condition()).as(f).isEqualTo(Condition.HEALTHY);
        }
        assertThat(r.loop.step().reason()).contains("link gw → far cut");

        // one engine refusing while its cluster's others answer is that engine's fault
        r.ticker.advanceSeconds(5);
        report(r, Map.of("e1", outcomes(40, 0, 40), "e2", outcomes(40, 40, 0)));
        assertThat(r.estimate("e1").condition()).isEqualTo(Condition.FAILING);
        assertThat(r.loop.estimates().links().get("gw").get("gpu").reachable()).isTrue();
    }

    /**
     * Two gateway clusters and a far cluster of two engines without metrics, judged from the gateways' reports alone:
     * refused by one gateway cluster while the other gets through, it is that link; refused by both, no link is cut
     * (the other's link, not cut yet, is no evidence that the cluster answers).
     */
    @Test
    void refusedByEveryGateway_cutsNoLink_refusedByOneWhileAnotherGetsThrough_cutsItsLink() {
        for (boolean otherGetsThrough : new boolean[] {true, false}) {
            List<Engine> es = new ArrayList<>();
            for (String id : List.of("e1", "e2")) {
                es.add(Rig.configured(id, "gpu", H100, 1));
            }
            for (String id : List.of("f1", "f2")) {
                es.add(Rig.configured(id, "far", H100, 1));
            }
            Topology t = new Topology(List.of(new GatewayCluster("gw", "r1"), new GatewayCluster("gw2", "r2")),
                    List.of(new EngineCluster("gpu", "r1"), new EngineCluster("far", "r2")),
                    Map.of("gw", Map.of("gpu", 2.0, "far", 40.0), "gw2", Map.of("gpu", 40.0, "far", 2.0)),
                    List.of(new Model("m", 120)), es, List.of(new TrafficClass("chat", "m", List.of(), 0)),
                    Map.of("gw", Map.of("chat", 100.0), "gw2", Map.of("chat", 100.0)), 0.1, 25);
            ManualTicker ticker = new ManualTicker();
            ControlLoop loop = ControlLoop.create(t, ControlOptions.defaults(), ticker, null);
            loop.step();
            for (int k = 0; k < 4; k++) {
                ticker.advanceSeconds(5);
                for (String f : List.of("f1", "f2")) {
                    loop.observe(EngineScrape.failed(f, ticker.nanos(), "no /metrics"));
                }
                Map<String, GatewayReport.EngineOutcomes> far = Map.of("f1", outcomes(30, 0, 30), "f2",
                        outcomes(30, 0, 30));
                loop.observe(new GatewayReport("gw", "", ticker.nanos(), 5, Map.of("chat", 500L), far, Map.of()));
                Map<String, GatewayReport.EngineOutcomes> other = otherGetsThrough
                        ? Map.of("f1", outcomes(30, 30, 0), "f2", outcomes(30, 30, 0)) : far;
                loop.observe(new GatewayReport("gw2", "", ticker.nanos(), 5, Map.of("chat", 500L), other,
                        otherGetsThrough ? Map.of("far", new GatewayReport.RoundTrip(2, 2.5, 3)) : Map.of()));
                loop.step();
            }
            Estimates est = loop.estimates();
            assertThat(est.links().get("gw").get("far").reachable()).as("gw's link, the other gets through: %s",
                    otherGetsThrough).isEqualTo(!otherGetsThrough);
            assertThat(est.links().get("gw2").get("far").reachable()).isTrue();
            assertThat(est.links().get("gw").get("far").why()).contains(otherGetsThrough ? "cut" : "configured");
            if (otherGetsThrough) {
                for (String f : List.of("f1", "f2")) {
                    assertThat(est.engines().get(f).condition()).as(f).isEqualTo(Condition.HEALTHY);
                }
            }
        }
    }

    /** {@code n} attempts, {@code ok} of them answered, {@code refused} connections refused. */
    private static GatewayReport.EngineOutcomes outcomes(long n, long ok, long refused) {
        GatewayReport.Mean none = GatewayReport.Mean.NONE;
        return new GatewayReport.EngineOutcomes(n, ok, refused, 0, 0, 0, none, none, none, none, 0, 0);
    }

    /** A gateway's report of the last 5 s with these engines' outcomes. */
    private static void report(Rig r, Map<String, GatewayReport.EngineOutcomes> engines) {
        r.loop.observe(new GatewayReport("gw", "", r.ticker.nanos(), 5, Map.of("chat", 750L), engines, Map.of()));
    }

    /** Engines as {@link #rig} with e1 crashed (no metrics, every attempt failing) for {@code seconds}. */
    private static Rig crashed(double seconds) {
        Rig r = rig(Map.of(), Map.of(), 150, 9);
        r.run(60);
        r.noMetrics.add("e1");
        r.errorRate.put("e1", 1.0);
        r.run(seconds);
        return r;
    }

    /** A gateway's report of the last 5 s: {@code n} attempts on {@code engine}, every connection refused. */
    private static void refused(Rig r, String engine, long n) {
        GatewayReport.Mean none = GatewayReport.Mean.NONE;
        r.loop.observe(new GatewayReport("gw", "", r.ticker.nanos(), 5, Map.of("chat", 750L), Map.of(engine,
                new GatewayReport.EngineOutcomes(n, 0, n, 0, 0, 0, none, none, none, none, 0, 0)), Map.of()));
    }

    @Test
    void estimateBelowTheRating_withoutAQueue_shedsNothing_whileAQueueSheds() {
        // engines that report decoding three times slower than they serve: the laws put their capacity at about a
        // third of their rating, while they carry 60% of it without a queue
        double mu = H100.saturation();
        Rig r = rig(Map.of(), Map.of(), 0.6 * 8 * mu, 17);
        r.engines.values().forEach(e -> e.misreportTbt(3));
        r.run(600);
        assertThat(r.estimate("e1").capacityRps()).isLessThan(0.6 * mu);

        assertThat(r.steps.stream().filter(Step::published).mapToDouble(s -> s.snapshot().objective().shedRps()).max()
                .orElseThrow()).as("shed by any published snapshot").isZero();
        assertThat(r.steps.stream().map(Step::reason).filter(x -> x.contains("not shed on capacities below the "
                + "rating that no queue has shown")).count()).isPositive();

        // demand beyond what they truly carry: a queue shows it, and the excess is shed
        r.demand = 1.3 * 8 * mu;
        r.run(60);
        assertThat(r.loop.published().objective().shedRps()).as(r.loop.lastStep().reason()).isPositive();
    }

    @Test
    void engineWithoutMetrics_isJudgedFromGatewaysAndCanaries() {
        Rig r = rig(Map.of(), Map.of(), 150, 8);
        r.noMetrics.add("e4");
        r.run(120);

        assertThat(r.estimate("e4").condition()).isEqualTo(Condition.HEALTHY);
        assertThat(r.estimate("e4").conditionWhy()).contains("no metrics");
        assertThat(r.loads().get("e4")).isPositive();
    }

    @Test
    void crashedEngine_isOutOfServiceWithinAScrapeOfFailedAttempts_andBackWhenItAnswers() {
        Rig r = crashed(10);

        assertThat(r.estimate("e1").condition()).isEqualTo(Condition.DOWN);
        assertThat(r.loads().get("e1")).isZero();

        r.noMetrics.remove("e1");
        r.errorRate.remove("e1");
        r.run(10);
        assertThat(r.estimate("e1").condition()).isEqualTo(Condition.HEALTHY);
    }

    @Test
    void stalledEngine_isOutOfServiceAfterTenSecondsOfSilence_teachesItsGroupNothing_andIsBackWhenItWorks() {
        Rig r = rig(Map.of(), Map.of(), 150, 21);
        r.run(120);
        double peerBefore = r.estimate("e1").capacityRps();
        double before = r.estimate("e2").capacityRps();
        r.stalled.add("e2");
        r.run(5);
        assertThat(r.estimate("e2").condition()).as("one silent interval is not enough").isEqualTo(Condition.HEALTHY);

        r.run(5);
        EngineEstimate stalled = r.estimate("e2");
        assertThat(stalled.condition()).isEqualTo(Condition.STALLED);
        assertThat(stalled.conditionWhy()).contains("no sign of work for 10 s").contains("back when a canary");
        assertThat(r.loads().get("e2")).isZero();

        r.run(120);
        assertThat(r.estimate("e2").condition()).as("its canaries time out: it stays out")
                .isEqualTo(Condition.STALLED);
        assertThat(r.estimate("e1").capacityRps()).as("its silence is no evidence about its group")
                .isCloseTo(peerBefore, within(0.1 * peerBefore));

        r.stalled.remove("e2");
        r.engines.get("e2").frozen = false;
        r.run(5);
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.HEALTHY);
        r.run(20);
        assertThat(r.loads().get("e2")).isPositive();
        assertThat(r.estimate("e2").capacityRps()).isCloseTo(before, within(0.15 * before));
    }

    /**
     * The requests a stalled engine held end at the gateways' timeouts, which may come after it is back: as many
     * failures as it held, reported since, are the stall's and do not make it failing; more than that do.
     */
    @Test
    void stalledEngineBackInService_isNotFailingForTheTimeoutsOfTheRequestsItHeld_butForMoreItIs() {
        Rig r = rig(Map.of(), Map.of(), 150, 21);
        r.run(120);
        r.stalled.add("e2");
        r.inFlight = new TreeMap<>(Map.of("e2", 26L));
        r.run(15);
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.STALLED);
        java.util.regex.Matcher held = java.util.regex.Pattern.compile("held (\\d+) requests")
                .matcher(r.estimate("e2").conditionWhy());
        assertThat(held.find()).isTrue();
        long n = Long.parseLong(held.group(1));
        assertThat(n).isGreaterThanOrEqualTo(26);

        r.stalled.remove("e2");
        r.inFlight = null;
        r.engines.get("e2").frozen = false;
        r.run(5);
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.HEALTHY);

        timedOut(r, "e2", n); // the requests it held, at the gateways' first-token timeout
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.HEALTHY);
        timedOut(r, "e2", 30); // beyond them: its own
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.FAILING);
    }

    /** A gateway's report of the last 5 s: {@code n} attempts on {@code engine}, each timed out. */
    private static void timedOut(Rig r, String engine, long n) {
        GatewayReport.Mean none = GatewayReport.Mean.NONE;
        report(r, Map.of(engine, new GatewayReport.EngineOutcomes(n, 0, 0, n, 0, 0, none, none, none, none, 0, 0)));
    }

    @Test
    void anSglangEngine_whoseGaugesLagUpToThirtySecondsWhenIdle_isStalledOnlyAfterFortySecondsOfSilence() {
        Rig r = rig(Map.of(), Map.of(), 150, 23);
        r.engines.get("e2").flavor = dev.sextant.signal.EngineMetrics.Flavor.SGLANG;
        r.run(120);
        r.stalled.add("e2");
        r.run(35);
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.HEALTHY);

        r.run(10);
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.STALLED);
        assertThat(r.estimate("e2").conditionWhy()).contains("no sign of work for 40 s");
    }

    @Test
    void anEngineThatTakesRequestsAndNeverStartsThem_isStalledOnItsGatewaysWord_whileItsGaugesReadIdle() {
        Rig r = rig(Map.of(), Map.of(), 150, 24);
        r.inFlight = new java.util.TreeMap<>();
        r.run(120);
        r.engines.get("e2").hangBeforeTheBatch();
        r.stalled.add("e2");
        r.inFlight.put("e2", 7L);

        r.run(15);
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.STALLED);
        assertThat(r.estimate("e2").conditionWhy()).contains("held 7 requests");
        assertThat(r.loads().get("e2")).isZero();
    }

    @Test
    void anEngineThatTakesRequestsAndNeverStartsThem_looksIdle_withoutItsGatewaysWord() {
        Rig r = rig(Map.of(), Map.of(), 150, 24);
        r.run(120);
        r.engines.get("e2").hangBeforeTheBatch();
        r.stalled.add("e2");

        r.run(30);
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.HEALTHY);
    }

    @Test
    void metricsThatStandStill_whileTheGatewaysSeeTheEngineAnswer_stallNothing() {
        Rig r = rig(Map.of(), Map.of(), 150, 22);
        r.run(120);
        r.engines.get("e2").frozen = true; // its exporter is stuck; the engine serves on

        r.run(60);
        assertThat(r.estimate("e2").condition()).isEqualTo(Condition.HEALTHY);
        assertThat(r.loads().get("e2")).isPositive();
    }

    /**
     * A control plane starting beside a busy fleet may miss an engine's first scrapes; as for an engine that answered
     * before, one or two misses are a slow scrape: it stays planned, and only the third takes it out.
     */
    @Test
    void engineOfTheTopology_whoseFirstScrapesTimeOut_staysPlanned_untilItMissesAsManyAsADownEngine() {
        Rig r = rig(Map.of(), Map.of(), 150, 12);
        r.noMetrics.add("e4");
        r.ejected.add("e4"); // nothing but the scrapes speaks of it
        r.errorRate.put("e4", 1.0); // nor does a canary answer

        r.run(10); // two scrapes missed
        assertThat(r.estimate("e4").condition()).isEqualTo(Condition.HEALTHY);
        assertThat(r.loads().get("e4")).isPositive();

        r.run(5); // the third
        assertThat(r.estimate("e4").condition()).as(r.estimate("e4").conditionWhy()).isIn(Condition.UNPROVEN,
                Condition.DOWN);
        assertThat(r.loads().get("e4")).isZero();
    }

    @Test
    void newEngine_startsUnproven_untilItAnswers() {
        Rig r = rig(Map.of(), Map.of(), 150, 10);
        r.run(30);
        List<Engine> more = new ArrayList<>(r.topology.engines());
        more.add(Rig.configured("e5", "gpu", H100, 1.0));
        r.loop.topology(r.topology.withEngines(more));

        assertThat(r.loop.estimates().engines().get("e5").condition()).isEqualTo(Condition.UNPROVEN);
        assertThat(r.loop.estimates().engines().get("e5").health()).isZero();
        assertThat(r.loop.canariesDue()).extracting(Canary::engine).contains("e5");
        r.loop.observe(CanaryResult.ok("e5", r.ticker.nanos(), 10, 5));
        assertThat(r.loop.estimates().engines().get("e5").condition()).isEqualTo(Condition.HEALTHY);
    }

    @Test
    void demand_followsTheReports_theConfiguredDemandIsOnlyThePrior() {
        Rig r = rig(Map.of(), Map.of(), 150, 11);
        r.demand = 45;
        r.run(90);

        DemandEstimate d = r.loop.estimates().demand().get("gw").get("chat");
        assertThat(d.rps()).isCloseTo(45, within(5.0));
        assertThat(d.configuredRps()).isEqualTo(150);
        assertThat(d.why()).startsWith("observed");
    }

    /**
     * A gateway cluster starting up reports a fraction of its demand at first; while its reports cannot yet tell a
     * ramp from a level, the configured demand is the floor of what the loop plans for, and once they settle what
     * they show is the demand, below the configured one.
     */
    @Test
    void demandRampingUp_isPlannedAtTheConfiguredDemand_untilTheReportsSettle() {
        Rig r = rig(Map.of(), Map.of(), 150, 18);
        for (double d : new double[] {15, 40, 65, 90}) {
            r.demand = d;
            r.run(5);
            DemandEstimate e = r.loop.estimates().demand().get("gw").get("chat");
            assertThat(e.rps()).as("at %s req/s", d).isEqualTo(150);
            assertThat(e.floored()).isTrue();
            assertThat(e.reportedRps()).isLessThan(0.75 * 150);
            assertThat(e.why()).startsWith("configured, until the reports settle");
        }
        r.demand = 100;
        r.run(60);

        DemandEstimate e = r.loop.estimates().demand().get("gw").get("chat");
        assertThat(e.floored()).isFalse();
        assertThat(e.rps()).isCloseTo(100, within(10.0));
        assertThat(e.why()).startsWith("observed");
    }

    /**
     * A steady demand below the configured one is what the loop plans for once four reports refute the configured
     * demand: even at the upper bound of their trend the demand would stay below it for a demand window.
     */
    @Test
    void demandSteadyBelowTheConfigured_isTheObservedOnceFourReportsRefuteTheConfigured() {
        Rig r = rig(Map.of(), Map.of(), 150, 19);
        r.demand = 45;
        r.run(10);
        assertThat(r.loop.estimates().demand().get("gw").get("chat").floored()).as("two reports bound no trend")
                .isTrue();
        r.run(10);
        DemandEstimate e = r.loop.estimates().demand().get("gw").get("chat");
        assertThat(e.floored()).isFalse();
        assertThat(e.rps()).isCloseTo(45, within(6.0));

        // 120 req/s against 150: four reports cannot exclude a rise to 150 within the window; more of them do
        Rig close = rig(Map.of(), Map.of(), 150, 21);
        close.demand = 120;
        close.run(20);
        assertThat(close.loop.estimates().demand().get("gw").get("chat").floored()).isTrue();
        close.run(40);
        assertThat(close.loop.estimates().demand().get("gw").get("chat").floored()).isFalse();
    }

    /**
     * Once the reports have settled, a fall of demand below the configured one is not floored: it is planned at the
     * level it fell from (that level's lower bound) until the hold has passed without it, and then followed; without
     * a hold, at once.
     */
    @Test
    void demandFallingAfterTheReportsSettled_isHeldForTheHold_thenFollowed() {
        Rig r = rig(Map.of(), Map.of(), 150, 20);
        r.run(30); // six reports, within the demand window of the first
        r.demand = 50;
        r.run(15);

        DemandEstimate e = r.loop.estimates().demand().get("gw").get("chat");
        assertThat(e.floored()).as("held above what the reports show").isTrue();
        assertThat(e.reportedRps()).isCloseTo(50, within(8.0));
        assertThat(e.rps()).isBetween(130.0, 150.0);
        assertThat(e.why()).contains("the most the reports showed in the last 5 min (its lower bound)");

        r.run(320); // the hold, past the last estimate that still showed some of the old level
        e = r.loop.estimates().demand().get("gw").get("chat");
        assertThat(e.floored()).isFalse();
        assertThat(e.rps()).isCloseTo(50, within(8.0));

        Topology t = fleet(truths(Map.of()), Map.of(), 150);
        Rig none = new Rig(t, truths(Map.of()), 20, ControlOptions.defaults().withDemandHold(Duration.ZERO));
        none.run(30);
        none.demand = 50;
        none.run(15);
        e = none.loop.estimates().demand().get("gw").get("chat");
        assertThat(e.floored()).isFalse();
        assertThat(e.rps()).isCloseTo(50, within(8.0));
    }

    /**
     * Bursts that recur within the hold are planned at their peak between them, so the plan does not follow each
     * burst down and up again: after the first burst, the published routing stays put. Without the hold the estimate
     * falls back between bursts and the loop publishes again at each.
     */
    @Test
    void burstsRecurringWithinTheHold_arePlannedAtTheirPeak_andThePlanStaysPut() {
        Topology t = fleet(truths(Map.of()), Map.of(), 60);
        Rig held = new Rig(t, truths(Map.of()), 23);
        Rig none = new Rig(t, truths(Map.of()), 23, ControlOptions.defaults().withDemandHold(Duration.ZERO));
        List<Long> heldVersions = new ArrayList<>();
        List<Long> noneVersions = new ArrayList<>();
        for (int minute = 0; minute < 5; minute++) {
            for (Rig r : List.of(held, none)) {
                r.demand = 150;
                r.run(10);
                r.demand = 60;
                r.run(50);
            }
            if (minute >= 2) {
                DemandEstimate between = held.loop.estimates().demand().get("gw").get("chat");
                assertThat(between.reportedRps()).as("minute %d", minute).isCloseTo(60, within(10.0));
                assertThat(between.rps()).as("minute %d", minute).isGreaterThan(120);
                assertThat(none.loop.estimates().demand().get("gw").get("chat").rps()).isCloseTo(60, within(10.0));
                heldVersions.add(held.loop.published().version());
                noneVersions.add(none.loop.published().version());
            }
        }
        assertThat(heldVersions).as("the held plan, minutes 2-4").containsOnly(heldVersions.get(0));
        assertThat(noneVersions).as("the plan without a hold, minutes 2-4").doesNotHaveDuplicates();
    }

    /**
     * A held peak is planned only as far as the engines carry it: where planning it would shed, the plan is for what
     * the reports show, and nothing is refused for demand that is not arriving.
     */
    @Test
    void heldPeak_theEnginesDoNotCarry_isNotHeld_andShedsNothing() {
        Topology t = Fleets.oneCluster(2, 50, 100); // four engines: 180 req/s of effective capacity
        Step carried = stepAfter(t, 170, 100);
        assertThat(carried.snapshot().objective().shedRps()).isZero();
        assertThat(carried.solvedFor().demandRps().get("gw").get("chat")).isBetween(150.0, 170.0);
        assertThat(carried.estimates().demand().get("gw").get("chat").why()).contains("the most the reports showed");

        Step beyond = stepAfter(t, 250, 100);
        assertThat(beyond.snapshot().objective().shedRps()).isZero();
        assertThat(beyond.solvedFor().demandRps().get("gw").get("chat")).isCloseTo(100, within(8.0));
        assertThat(beyond.estimates().demand().get("gw").get("chat").why())
                .contains("not held at its recent peak: the engines do not carry it");
    }

    /**
     * A peak that recurs (bursts that come back every minute) beyond what the engines carry is planned at as much of
     * it as they carry, not at the lull between: the next burst then finds the plan spread for it. A level that fell
     * once (above) is not, since what it would keep is capacity no demand comes for.
     */
    @Test
    void recurringPeak_theEnginesDoNotCarry_isPlannedAsFarAsTheyCarryIt_andShedsNothing() {
        Topology t = Fleets.oneCluster(2, 50, 100); // four engines: 180 req/s of effective capacity
        ManualTicker ticker = new ManualTicker();
        ControlLoop loop = ControlLoop.create(t, ControlOptions.defaults(), ticker, null);
        loop.step();
        Step last = null;
        for (int minute = 0; minute < 3; minute++) {
            for (int i = 0; i < 12; i++) {
                ticker.advanceSeconds(5);
                long rps = i < 2 ? 250 : 100; // 10 s of bursts, then the lull
                loop.observe(new GatewayReport("gw", "", ticker.nanos(), 5, Map.of("chat", 5 * rps), Map.of(),
                        Map.of(), Map.of(), null));
                last = loop.step();
            }
        }
        assertThat(last.snapshot().objective().shedRps()).as("nothing beyond the solver's precision")
                .isCloseTo(0, within(1e-6));
        assertThat(last.estimates().demand().get("gw").get("chat").reportedRps()).isCloseTo(100, within(10.0));
        assertThat(last.solvedFor().demandRps().get("gw").get("chat")).as("planned up to the effective capacity")
                .isCloseTo(180, within(5.0));
        assertThat(last.estimates().demand().get("gw").get("chat").why()).contains("as much as the engines carry");
    }

    /** A step after a minute of 5-s reports at {@code peak} req/s and then 30 s of them at {@code now}. */
    private static Step stepAfter(Topology t, long peak, long now) {
        ManualTicker ticker = new ManualTicker();
        ControlLoop loop = ControlLoop.create(t, ControlOptions.defaults(), ticker, null);
        loop.step();
        for (int i = 0; i < 18; i++) {
            ticker.advanceSeconds(5);
            loop.observe(new GatewayReport("gw", "", ticker.nanos(), 5, Map.of("chat", 5 * (i < 12 ? peak : now)),
                    Map.of(), Map.of(), Map.of(), null));
            loop.step();
        }
        return loop.step();
    }

    /**
     * The configured floor of a young demand never sheds: where the engines do not carry it, the plan is for what
     * the reports show and as much of the configured demand beyond it as they carry; what the reports show alone is
     * shed where it exceeds what they carry.
     */
    @Test
    void configuredFloor_isPlannedOnlyAsFarAsTheEnginesCarryIt() {
        Topology t = Fleets.oneCluster(2, 50, 400); // four engines: 180 req/s of effective capacity
        Step within = stepAfterOneReport(t, 100);
        double planned = within.solvedFor().demandRps().get("gw").get("chat");
        assertThat(within.snapshot().route("gw", "chat").shedFraction()).isZero();
        assertThat(planned).isGreaterThan(150).isLessThanOrEqualTo(180);
        assertThat(within.reason()).contains("planned for what the reports show and");
        assertThat(within.estimates().demand().get("gw").get("chat").floored()).isTrue();

        Step beyond = stepAfterOneReport(t, 250);
        assertThat(beyond.solvedFor().demandRps().get("gw").get("chat")).isEqualTo(250);
        assertThat(beyond.snapshot().objective().shedRps()).isCloseTo(250 - 180.0, within(1e-6));
    }

    private static Step stepAfterOneReport(Topology t, long rps) {
        ManualTicker ticker = new ManualTicker();
        ControlLoop loop = ControlLoop.create(t, ControlOptions.defaults(), ticker, null);
        loop.step();
        ticker.advanceSeconds(5);
        loop.observe(new GatewayReport("gw", "", ticker.nanos(), 5, Map.of("chat", 5 * rps), Map.of(), Map.of(),
                Map.of(), null));
        return loop.step();
    }

    @Test
    void demandSurge_isFollowedWithinTwoReports() {
        Rig r = rig(Map.of(), Map.of(), 150, 12);
        r.run(120);
        r.demand = 300;
        r.run(10);

        assertThat(r.loop.estimates().demand().get("gw").get("chat").rps()).isCloseTo(300, within(30.0));
    }

    @Test
    void demandChange_isUrgentOnlyWhenTheHeldRoutingNoLongerFitsIt() {
        Rig r = rig(Map.of(), Map.of(), 150, 16);
        r.solveSeconds = 60;
        r.run(120);
        int before = r.steps.size();
        r.demand = 170; // a change the held routing carries: it waits for the scheduled step
        r.run(30);
        assertThat(r.steps).hasSize(before);

        double capacity = r.topology.engines().stream().mapToDouble(Engine::capacityRps).sum();
        r.demand = capacity; // more than the held routing carries within its headroom, however it spreads
        r.run(15);
        assertThat(r.steps.size()).isGreaterThan(before);
        assertThat(r.steps.get(before).published()).isTrue();
        assertThat(r.steps.get(before).reason()).contains("held routing");
    }

    @Test
    void ratedTooHigh_capacityComesDownToTheMeasuredSaturation() {
        Batching small = new Batching(5, 0.03, 6e-6, 0, 0.006, 1, 24, 120, 300);
        Map<String, Batching> t = truths(Map.of("e1", small, "e2", small, "e3", small, "e4", small));
        // configured as the h100 (64 sequences): about 2.6× too high; 300 req/s load them past what they carry
        Rig r = new Rig(fleet(t, Map.of(), 300), t, 13);
        r.run(120);

        double mu = small.saturation();
        assertThat(r.estimate("e1").capacityRps()).isCloseTo(mu, within(0.15 * mu));
        assertThat(r.estimate("e1").batchSlots()).isCloseTo(24, within(2.0));
    }

    /**
     * The same engines rated as the h100, with the batch limit they were started with written in the topology: the
     * rating that batch cannot hold is not believed from the first step, before any evidence, and the evidence then
     * brings the capacity to the truth as before.
     */
    @Test
    void ratedTooHigh_withItsBatchLimitStated_isRatedByTheBatchFromTheFirstStep() {
        Batching small = new Batching(5, 0.03, 6e-6, 0, 0.006, 1, 24, 120, 300);
        Map<String, Batching> t = truths(Map.of("e1", small, "e2", small, "e3", small, "e4", small));
        Topology configured = fleet(t, Map.of(), 150);
        List<Engine> es = new ArrayList<>();
        for (Engine e : configured.engines()) {
            es.add(e.id().startsWith("e") ? withBatchLimit(e, 24) : withBatchLimit(e, 64));
        }
        Rig r = new Rig(configured.withEngines(es), t, 13);

        double mu = small.saturation();
        EngineEstimate first = r.estimate("e1");
        assertThat(configured.engines().get(0).capacityRps()).as("the rating").isGreaterThan(2 * mu);
        assertThat(first.evidence()).isZero();
        assertThat(first.capacityRps()).as(first.capacityWhy()).isCloseTo(mu, within(0.05 * mu));
        assertThat(first.capacityWhy()).contains("24 sequences at once (max_num_seqs)")
                .contains("not the configured " + String.format(java.util.Locale.ROOT, "%.1f",
                        configured.engines().get(0).capacityRps()));
        EngineEstimate far = r.estimate("f1");
        assertThat(far.capacityRps()).as("64 sequences hold the h100's rating: it stands")
                .isEqualTo(configured.engines().get(4).capacityRps());
        assertThat(far.capacityWhy()).contains("as configured").doesNotContain("max_num_seqs");

        r.run(120);
        assertThat(r.estimate("e1").capacityRps()).isCloseTo(mu, within(0.15 * mu));
        // the gateways are told each batch as estimated, which a full one is judged by (docs/request-path.md §4)
        r.loop.published().engines().forEach((id, e) -> assertThat(e.batchPlaces()).as(id)
                .isEqualTo(Math.floor(r.estimate(id).batchSlots())).isGreaterThanOrEqualTo(1));
        assertThat(r.loop.published().engines().get("e1").batchPlaces()).isLessThanOrEqualTo(24);
    }

    private static Engine withBatchLimit(Engine e, int maxNumSeqs) {
        return new Engine(e.id(), e.cluster(), e.endpoint(), e.models(), e.capacityRps(), e.profile(), e.health(),
                e.priorityScheduling(), maxNumSeqs);
    }

    @Test
    void smallBatchOverloaded_capacityIsWhatItServesWithItsBatchFull_andTheExcessIsShed() {
        // two sequences, one 40 ms step per request: 50 req/s each, whatever the laws extrapolate
        Batching tiny = new Batching(40, 0, 0, 0, 0, 1, 2, 1, 10);
        Map<String, Batching> t = new LinkedHashMap<>();
        t.put("e1", tiny);
        t.put("e2", tiny);
        Rig r = new Rig(fleet(t, Map.of(), 15), t, 3);
        r.run(40);
        r.demand = 200; // twice what they carry
        r.run(60);

        assertThat(r.estimate("e1").capacityRps()).isCloseTo(50, within(2.5));
        assertThat(r.estimate("e1").capacityWhy()).contains("served while a backlog kept it full");
        // everything beyond the effective capacity (2 × 50 × 0.9) is shed, no more
        assertThat(r.loop.published().objective().shedRps()).isCloseTo(200 - 90, within(6.0));
    }

    @Test
    void profileWrongByLessThanTheSlowFactor_theLawsLearnTheEngine_notTheirPrior() {
        // e1 configured as an engine decoding 30% slower than it does: its own group (a group of one), and 1.3× is
        // below the slow factor, so no penalty absorbs it; only the laws can
        Batching slower = new Batching(6.5, 0.039, 6e-6, 0, 0.006, 1, 64, 120, 300);
        Map<String, Batching> t = truths(Map.of());
        Topology fleet = fleet(t, Map.of(), 150);
        List<Engine> es = new ArrayList<>(fleet.engines());
        es.set(0, Rig.configured("e1", "gpu", slower, H100.saturation() / slower.saturation()));
        Rig r = new Rig(fleet.withEngines(es), t, 17);
        double configuredTbt = r.estimate("e1").profile().tbtMs(0.5);
        r.run(900);

        EngineEstimate e = r.estimate("e1");
        assertThat(e.slowdown()).isEqualTo(1.0);
        for (double rho : new double[] {0.2, 0.5}) {
            double x = rho * e.capacityRps();
            assertThat(e.profile().tbtMs(rho)).as("TBT at %.0f%% (configured %.2f ms at 50%%)", 100 * rho,
                    configuredTbt).isCloseTo(H100.tbt(x), within(0.05 * H100.tbt(x)));
        }
    }

    /**
     * The clients start asking for answers twice as long: the same engines now carry about half the requests. What the
     * engines are sent is evidence about the clients, not about the hardware, and follows them within some thousand
     * requests; the laws keep their ten minutes.
     */
    @Test
    void outputsTwiceAsLong_capacityFollowsWithinAMinute_andTheLawsStay() {
        Rig r = rig(Map.of(), Map.of(), 150, 16);
        r.run(300);
        double before = r.estimate("e1").capacityRps();
        double tbt = r.estimate("e1").profile().tbtMs(0.5);
        assertThat(before).isCloseTo(H100.saturation(), within(0.1 * H100.saturation()));
        r.engines.values().forEach(e -> e.outputTokens(240));
        r.run(60);

        double mu = r.engines.get("e1").saturation();
        assertThat(mu).as("the truth: %.1f req/s at 120 tokens", H100.saturation()).isLessThan(0.6 * before);
        EngineEstimate e = r.estimate("e1");
        assertThat(e.capacityRps()).as(e.capacityWhy()).isCloseTo(mu, within(0.15 * mu));
        assertThat(r.loop.estimates().models().get("m").outputTokens()).isCloseTo(240, within(24));
        assertThat(e.profile().tbtMs(0.5)).as("the step law is the engine's, whatever it is sent")
                .isCloseTo(tbt, within(0.15 * tbt));
    }

    @Test
    void ratedTooLow_capacityRisesAsTheEngineShowsItsRoom_neverPastTheTruth() {
        Rig r = rig(Map.of(), Map.of("e1", 0.4, "e2", 0.4, "e3", 0.4, "e4", 0.4), 200, 14);
        double configured = r.estimate("e1").capacityRps();
        r.run(900);

        assertThat(r.estimate("e1").capacityRps()).isGreaterThan(1.15 * configured)
                .isLessThan(1.1 * H100.saturation());
    }

    @Test
    void constantTruth_publicationsStopOnceTheEstimatesSettle() {
        Rig r = rig(Map.of(), Map.of(), 150, 15);
        r.run(300);
        int settled = r.steps.size();
        r.run(600);

        assertThat(r.publicationsSince(settled)).as(r.steps.subList(settled, r.steps.size()).stream()
                .filter(Step::published).map(Step::reason).toList().toString()).isLessThanOrEqualTo(1);
        assertThat(r.steps.get(r.steps.size() - 1).reason()).contains("not above the threshold");
    }

    @Test
    void explanations_nameEvidenceAndPrior() {
        Rig r = rig(Map.of(), Map.of(), 150, 16);
        r.run(60);
        List<String> lines = Explanations.lines(r.loop.estimates(), r.loop.lastStep(), null, "gw");

        assertThat(String.join("\n", lines)).contains("e1 HEALTHY").contains("estimated from").contains("configured")
                .contains("gw/chat").contains("observed").contains("Last step:")
                .contains("output lengths c² 1 assumed"); // the fake engines export no histogram of them
    }
}
