package dev.sextant.server.internal;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * A JDK HTTP client body read up to a limit: a body that announces more, or sends more, fails with an
 * {@link IOException} naming the limit and the rest is not read (the exchange is cancelled). For peers that are not
 * Sextant's own: the JDK's {@code ofString()} holds whatever comes, and its line reader a line until it ends.
 */
public final class BoundedBody {
    private BoundedBody() {
    }

    /** Bodies of at most {@code limit} bytes, as UTF-8 text; one that announces more is refused before it is read. */
    public static HttpResponse.BodyHandler<String> ofString(long limit) {
        return info -> limited(HttpResponse.BodySubscribers.ofString(StandardCharsets.UTF_8), limit,
                info.headers().firstValueAsLong("content-length").orElse(-1));
    }

    /**
     * {@code delegate}, fed as long as the body stays within {@code limit} bytes; past it the exchange is cancelled and
     * the delegate fails with an {@link IOException} naming the limit. For bodies read as they come (lines, events).
     */
    public static <T> HttpResponse.BodySubscriber<T> limited(HttpResponse.BodySubscriber<T> delegate, long limit) {
        return limited(delegate, limit, -1);
    }

    private static <T> HttpResponse.BodySubscriber<T> limited(HttpResponse.BodySubscriber<T> delegate, long limit,
                                                              long announced) {
        return new HttpResponse.BodySubscriber<>() {
            private Flow.Subscription upstream;
            private long seen;
            private boolean over;

            @Override
            public CompletionStage<T> getBody() {
                return delegate.getBody();
            }

            @Override
            public void onSubscribe(Flow.Subscription s) {
                upstream = s;
                delegate.onSubscribe(s);
                if (announced > limit) {
                    fail(announced + " bytes announced");
                }
            }

            @Override
            public void onNext(List<ByteBuffer> items) {
                if (over) {
                    return;
                }
                for (ByteBuffer b : items) {
                    seen += b.remaining();
                }
                if (seen > limit) {
                    fail("more than " + limit + " bytes");
                    return;
                }
                delegate.onNext(items);
            }

            private void fail(String what) {
                over = true;
                upstream.cancel();
                delegate.onError(new IOException("a body of " + what + " (expected: at most " + limit + " bytes)"));
            }

            @Override
            public void onError(Throwable t) {
                if (!over) {
                    delegate.onError(t);
                }
            }

            @Override
            public void onComplete() {
                if (!over) {
                    delegate.onComplete();
                }
            }
        };
    }
}
