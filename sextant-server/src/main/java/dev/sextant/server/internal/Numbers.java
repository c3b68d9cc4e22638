package dev.sextant.server.internal;

/** Numbers as a message or a generated file writes them for a reader. */
public final class Numbers {
    private Numbers() {
    }

    /**
     * {@code v} written plainly: a whole number without a fraction ({@code 2}, not {@code 2.0}), any other as
     * {@link Double#toString} writes it ({@code 2.5}, {@code NaN}, {@code Infinity}).
     */
    public static String plain(double v) {
        return v == Math.rint(v) && Math.abs(v) < 0x1p63 ? Long.toString((long) v) : Double.toString(v);
    }
}
