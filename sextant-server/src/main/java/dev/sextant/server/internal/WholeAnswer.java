package dev.sextant.server.internal;

import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A JDK HTTP client exchange bounded as a whole. A request's own timeout ends when the answer's head arrives; a body
 * that stops after it (a peer stopped mid-answer, a connection gone half-open) would hold the caller for good. Here
 * the answer must be whole by a deadline, or the exchange is cancelled (its connection closed) and the caller gets an
 * {@link IOException} saying so.
 */
public final class WholeAnswer {
    private WholeAnswer() {
    }

    /**
     * Sends {@code request} on {@code client} and returns its answer, whole within {@code deadline} of now.
     *
     * @throws IOException          the exchange's own failure, or none whole by the deadline
     * @throws InterruptedException interrupted while waiting (the exchange is cancelled)
     */
    public static <T> HttpResponse<T> send(HttpClient client, HttpRequest request, HttpResponse.BodyHandler<T> body,
                                           Duration deadline) throws IOException, InterruptedException {
        CompletableFuture<HttpResponse<T>> call = client.sendAsync(request, body);
        try {
            return call.get(deadline.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            call.cancel(true);
            throw new IOException("no whole answer within " + deadline.toMillis() + " ms");
        } catch (InterruptedException e) {
            call.cancel(true);
            throw e;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException io) {
                throw io;
            }
            if (cause instanceof RuntimeException re) {
                throw re;
            }
            throw new IOException(cause);
        }
    }
}
