package dev.sextant.sim;

/**
 * {@code sextant}: the production control plane (optimizer) and data plane (selector) driven by the
 * simulator. Placeholder until the production classes are available.
 */
final class SextantPolicy implements SimPolicy {
    @Override
    public String name() {
        return "sextant";
    }

    @Override
    public void start(Simulation sim) {
        throw new UnsupportedOperationException("sextant: the production optimizer and selector are not built yet");
    }

    @Override
    public int select(SimRequest r) {
        throw new UnsupportedOperationException("sextant");
    }

    @Override
    public int retry(SimRequest r, int failedEngine) {
        return -1;
    }
}
