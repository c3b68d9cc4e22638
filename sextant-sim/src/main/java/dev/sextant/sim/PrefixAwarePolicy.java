package dev.sextant.sim;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code prefix-aware}: cache-aware routing as the SGLang model gateway's {@code cache_aware} policy
 * describes it. Each gateway cluster keeps its own approximate picture of which engine holds which
 * prefix (here: per conversation, the engine and prompt tokens it last sent there). When the load is
 * imbalanced (max − min in-flight &gt; {@code balanceAbs} and max &gt; {@code balanceRel} × min) it sends
 * the request to the least-loaded engine; otherwise to the engine with the longest cached prefix when the
 * match ratio exceeds {@code cacheThreshold}, else to the engine whose picture holds the fewest tokens
 * (most cache room). Defaults 0.3, 64 and 1.5 are that gateway's documented defaults. A conversation's first turn
 * that starts with a shared system prompt matches that prompt's tokens on the engine the picture last sent a request
 * of the same model with it to (of the engines holding it, the most recently used), if the request's class may use
 * it: a prompt cached by another model's engine, or outside the class's residency, is no match.
 */
final class PrefixAwarePolicy extends BaselinePolicy {
    static final double CACHE_THRESHOLD = 0.3;
    static final int BALANCE_ABS = 64;
    static final double BALANCE_REL = 1.5;

    private List<Map<Long, long[]>> trees;
    private long[][] treeTokens;
    /** Per gateway cluster: (model, shared system prompt) → the engine its picture last sent it to. */
    private List<Map<Long, Integer>> sharedPrompts;
    /** Per class: the index of its model, so that a shared prompt is matched per model. */
    private int[] classModel;

    @Override
    public String name() {
        return "prefix-aware";
    }

    @Override
    public void start(Simulation s) {
        super.start(s);
        trees = new ArrayList<>();
        for (int g = 0; g < s.gatewayCount; g++) {
            trees.add(new HashMap<>());
        }
        treeTokens = new long[s.gatewayCount][s.engineCount];
        sharedPrompts = new ArrayList<>();
        for (int g = 0; g < s.gatewayCount; g++) {
            sharedPrompts.add(new HashMap<>());
        }
        List<String> models = new ArrayList<>();
        classModel = new int[s.topology.classes().size()];
        for (int k = 0; k < classModel.length; k++) {
            String m = s.topology.classes().get(k).model();
            if (!models.contains(m)) {
                models.add(m);
            }
            classModel[k] = models.indexOf(m);
        }
    }

    /** The picture's key of {@code r}'s shared system prompt: its class's model and the prompt. */
    private long sharedKey(SimRequest r) {
        return (long) classModel[r.trafficClass] << 32 | (r.conversation.systemPrompt & 0xFFFF_FFFFL);
    }

    @Override
    protected int choose(SimRequest r, int exclude) {
        int g = r.gateway;
        int[] allowed = sim.allowed[r.trafficClass];
        int[] load = sim.inFlight[g];
        int min = Integer.MAX_VALUE;
        int max = -1;
        int argMin = -1;
        for (int j : allowed) {
            if (candidate(r, j, exclude)) {
                if (load[j] < min) {
                    min = load[j];
                    argMin = j;
                }
                max = Math.max(max, load[j]);
            }
        }
        if (argMin < 0) {
            return -1;
        }
        int chosen;
        long[] entry = trees.get(g).get(r.affinityKey());
        int shared = entry == null ? sharedMatch(r, exclude) : -1;
        if (max - min > BALANCE_ABS && max > BALANCE_REL * min) {
            chosen = argMin;
        } else if (entry != null && candidate(r, (int) entry[0], exclude)
                && Math.min(entry[1], r.promptTokens) > CACHE_THRESHOLD * r.promptTokens) {
            chosen = (int) entry[0];
        } else if (shared >= 0) {
            chosen = shared;
        } else {
            // fewest tokens; ties (common: many gateways, each with its own picture) broken by a hash of
            // the conversation, so gateways do not all herd onto the lowest-numbered engine
            chosen = -1;
            long best = Long.MAX_VALUE;
            double bestTie = 2;
            for (int j : allowed) {
                if (!candidate(r, j, exclude)) {
                    continue;
                }
                long t = treeTokens[g][j];
                double tie = Hashing.unit(r.affinityKey(), j);
                if (t < best || (t == best && tie < bestTie)) {
                    best = t;
                    bestTie = tie;
                    chosen = j;
                }
            }
        }
        if (entry != null) {
            treeTokens[g][(int) entry[0]] -= entry[1];
        }
        trees.get(g).put(r.affinityKey(), new long[] {chosen, r.promptTokens});
        treeTokens[g][chosen] += r.promptTokens;
        if (r.conversation != null && r.conversation.systemPrompt >= 0) {
            sharedPrompts.get(g).put(sharedKey(r), chosen);
        }
        return chosen;
    }

    /**
     * The engine whose picture holds {@code r}'s shared system prompt for its model when that prompt is more than the
     * threshold of {@code r}'s and the class may use that engine, else -1.
     */
    private int sharedMatch(SimRequest r, int exclude) {
        Conversation c = r.conversation;
        if (c == null || c.systemPrompt < 0 || c.systemTokens <= CACHE_THRESHOLD * r.promptTokens) {
            return -1;
        }
        Integer j = sharedPrompts.get(r.gateway).get(sharedKey(r));
        return j != null && sim.allowedMask[r.trafficClass][j] && candidate(r, j, exclude) ? j : -1;
    }

    @Override
    public void conversationEnded(Conversation c) {
        long[] entry = trees.get(c.gateway).remove(c.id);
        if (entry != null) {
            treeTokens[c.gateway][(int) entry[0]] -= entry[1];
        }
    }
}
