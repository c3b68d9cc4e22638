package dev.sextant.snapshot;


/**
 * A route's weights as parallel arrays over shared {@link SortedEngineIds}: engine {@code ids.get(rank[i])}
 * has weight {@code value[i]}, ranks strictly ascending, so iteration is in engine-id order. Unmodifiable.
 * A large fleet's snapshot holds about a million weights; as map entries with boxed numbers they cost
 * more to build, copy and hash than the solve itself.
 */
final class SortedWeights extends IndexedWeights {
    final SortedEngineIds ids;
    final int[] rank;
    final double[] value;
    /** Σ value, and whether every value is positive: what a slot table needs checked of weights. */
    final double total;
    final boolean allPositive;
    /**
     * {@link java.util.Arrays#hashCode(int[])} of {@link #rank}, computed when first asked; 0 until then (as
     * {@link String#hashCode} does it: one int, so a thread sees 0 or the hash, never half of it).
     */
    private int rankHash;

    /** The arrays become this object's: the caller must not keep them. */
    SortedWeights(SortedEngineIds ids, int[] rank, double[] value) {
        this.ids = ids;
        this.rank = rank;
        this.value = value;
        double sum = 0;
        boolean positive = true;
        for (double v : value) {
            sum += v;
            positive &= v > 0;
        }
        this.total = sum;
        this.allPositive = positive;
    }

    /** Hash of the ranks, kept: a route's ranks are keyed on in the snapshot that has it and the next. */
    int rankHash() {
        int h = rankHash;
        if (h == 0) {
            h = java.util.Arrays.hashCode(rank);
            rankHash = h;
        }
        return h;
    }

    @Override
    public int size() {
        return rank.length;
    }

    @Override
    int indexOf(Object key) {
        if (!(key instanceof String s)) {
            return -1;
        }
        int lo = 0;
        int hi = rank.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int c = ids.get(rank[mid]).compareTo(s);
            if (c < 0) {
                lo = mid + 1;
            } else if (c > 0) {
                hi = mid - 1;
            } else {
                return mid;
            }
        }
        return -1;
    }

    @Override
    public boolean equals(Object o) {
        if (o instanceof SortedWeights other) {
            if (other.rank.length != rank.length) {
                return false;
            }
            for (int i = 0; i < rank.length; i++) {
                if (Double.compare(value[i], other.value[i]) != 0
                        || !ids.get(rank[i]).equals(other.ids.get(other.rank[i]))) {
                    return false;
                }
            }
            return true;
        }
        return super.equals(o);
    }

    @Override
    String keyAt(int i) {
        return ids.get(rank[i]);
    }

    @Override
    double valueAt(int i) {
        return value[i];
    }
}
