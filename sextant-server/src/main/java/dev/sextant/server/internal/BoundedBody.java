package dev.sextant.server.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * A JDK HTTP client body read as UTF-8 text up to a limit (or, {@link #limited}, fed to a subscriber up to one): a body that announces more, or sends more, fails with an
 * {@link IOException} naming the limit and the rest is not read (the exchange is cancelled). For peers that are not
 * Sextant's own, whose answer the reader must hold whole: the JDK's {@code ofString()} holds whatever comes.
 */
public final class BoundedBody implements HttpResponse.BodySubscriber<String> {
    private final long limit;
    private final CompletableFuture<String> result = new CompletableFuture<>();
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private Flow.Subscription subscription;

    private BoundedBody(long limit) {
        this.limit = limit;
    }

    /** Bodies of at most {@code limit} bytes, as text. */
    public static HttpResponse.BodyHandler<String> ofString(long limit) {
        return info -> {
            long announced = info.headers().firstValueAsLong("content-length").orElse(-1);
            BoundedBody b = new BoundedBody(limit);
            if (announced > limit) {
                b.result.completeExceptionally(b.over(announced + " bytes announced"));
            }
            return b;
        };
    }

    /**
     * {@code delegate}, fed as long as the body stays within {@code limit} bytes; past it the exchange is cancelled and
     * the delegate fails with an {@link IOException} naming the limit. For bodies read as they come (lines, events).
     */
    public static <T> HttpResponse.BodySubscriber<T> limited(HttpResponse.BodySubscriber<T> delegate, long limit) {
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
                    over = true;
                    upstream.cancel();
                    delegate.onError(new IOException("a body of more than " + limit + " bytes (expected: at most "
                            + limit + " bytes)"));
                    return;
                }
                delegate.onNext(items);
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

    private IOException over(String what) {
        return new IOException("a body of " + what + " (expected: at most " + limit + " bytes)");
    }

    @Override
    public CompletionStage<String> getBody() {
        return result;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        subscription = s;
        if (result.isDone()) {
            s.cancel();
        } else {
            s.request(Long.MAX_VALUE);
        }
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
        if (result.isDone()) {
            return;
        }
        for (ByteBuffer b : items) {
            if (bytes.size() + (long) b.remaining() > limit) {
                subscription.cancel();
                result.completeExceptionally(over("more than " + limit + " bytes"));
                return;
            }
            byte[] a = new byte[b.remaining()];
            b.get(a);
            bytes.write(a, 0, a.length);
        }
    }

    @Override
    public void onError(Throwable t) {
        result.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
        result.complete(bytes.toString(StandardCharsets.UTF_8));
    }
}
