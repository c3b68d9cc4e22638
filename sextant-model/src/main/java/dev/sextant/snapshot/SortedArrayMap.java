package dev.sextant.snapshot;

import java.util.Arrays;

/**
 * An unmodifiable map from ids to numbers held as two parallel arrays, keys strictly ascending, so it
 * iterates in id order and finds a key by binary search. For the small maps a snapshot holds by the
 * tens of thousands (a grouped route's fractions), where boxed map entries would cost more to build
 * than the numbers they hold.
 */
final class SortedArrayMap extends IndexedWeights {
    final String[] keys;
    final double[] values;

    /** The arrays become this object's: the caller must not change them. Keys must ascend strictly. */
    SortedArrayMap(String[] keys, double[] values) {
        this.keys = keys;
        this.values = values;
    }

    boolean allPositive() {
        for (double v : values) {
            if (!(v > 0)) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int size() {
        return keys.length;
    }

    @Override
    int indexOf(Object key) {
        return key instanceof String s ? Arrays.binarySearch(keys, s) : -1;
    }

    @Override
    public boolean equals(Object o) {
        if (o instanceof SortedArrayMap other) {
            return Arrays.equals(keys, other.keys) && Arrays.equals(values, other.values);
        }
        return super.equals(o);
    }

    @Override
    String keyAt(int i) {
        return keys[i];
    }

    @Override
    double valueAt(int i) {
        return values[i];
    }
}
