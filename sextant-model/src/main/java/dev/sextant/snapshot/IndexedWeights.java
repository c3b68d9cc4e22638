package dev.sextant.snapshot;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * An unmodifiable map from ids to numbers whose i-th entry, in id order, is ({@link #keyAt}, {@link #valueAt}):
 * the iteration the array-backed maps of a snapshot share.
 */
abstract class IndexedWeights extends AbstractMap<String, Double> {

    abstract String keyAt(int i);

    abstract double valueAt(int i);

    /** The position of {@code key}, or a negative number when it is not a key. */
    abstract int indexOf(Object key);

    @Override
    public Double get(Object key) {
        int i = indexOf(key);
        return i < 0 ? null : valueAt(i);
    }

    @Override
    public boolean containsKey(Object key) {
        return indexOf(key) >= 0;
    }

    @Override
    public void forEach(BiConsumer<? super String, ? super Double> action) {
        for (int i = 0, n = size(); i < n; i++) {
            action.accept(keyAt(i), valueAt(i));
        }
    }

    @Override
    public int hashCode() {
        return super.hashCode();
    }

    @Override
    public Set<Map.Entry<String, Double>> entrySet() {
        return new AbstractSet<>() {
            @Override
            public int size() {
                return IndexedWeights.this.size();
            }

            @Override
            public Iterator<Map.Entry<String, Double>> iterator() {
                return new Iterator<>() {
                    private final int n = IndexedWeights.this.size();
                    private int i;

                    @Override
                    public boolean hasNext() {
                        return i < n;
                    }

                    @Override
                    public Map.Entry<String, Double> next() {
                        if (i >= n) {
                            throw new NoSuchElementException();
                        }
                        Map.Entry<String, Double> e = new SimpleImmutableEntry<>(keyAt(i), valueAt(i));
                        i++;
                        return e;
                    }
                };
            }
        };
    }
}
