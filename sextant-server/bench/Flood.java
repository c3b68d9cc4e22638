import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What a stranger without a token can throw at a listener, for listener-floods.sh; run as a source file:
 * {@code java Flood.java MODE PORT PATH SECONDS CONNECTIONS}. Modes:
 * <ul>
 *   <li>{@code bodies}: CONNECTIONS threads each POST PATH with a wrong token and a 1 MB body, one a second on a
 *   fresh connection;</li>
 *   <li>{@code idle}: CONNECTIONS connections opened and held, sending nothing (each reopened when closed);</li>
 *   <li>{@code slow-heads}: CONNECTIONS connections each sending its request head one byte a second (reopened when
 *   closed);</li>
 *   <li>{@code unfinished}: CONNECTIONS threads each POST PATH announcing a 15 MB body, send 14 MB of it and wait,
 *   never finishing it (reopened, a second later, when the server closes).</li>
 * </ul>
 * Prints one line: what it did (connections made, refused or reset, bodies answered).
 */
public final class Flood {
    static final byte[] MB = new byte[1_000_000];
    static final AtomicLong connects = new AtomicLong();
    static final AtomicLong failures = new AtomicLong();
    static final AtomicLong answers = new AtomicLong();

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int port = Integer.parseInt(args[1]);
        String path = args[2];
        long end = System.nanoTime() + (long) (Double.parseDouble(args[3]) * 1e9);
        int n = Integer.parseInt(args[4]);
        java.util.Arrays.fill(MB, (byte) 'x');
        List<Thread> threads = new ArrayList<>();
        switch (mode) {
            case "bodies" -> {
                for (int i = 0; i < n; i++) {
                    threads.add(start(() -> bodies(port, path, end)));
                }
            }
            case "idle", "slow-heads" -> threads.add(start(() -> hold(port, path, end, n, mode.equals("slow-heads"))));
            case "unfinished" -> {
                for (int i = 0; i < n; i++) {
                    threads.add(start(() -> unfinished(port, path, end)));
                }
            }
            default -> throw new IllegalArgumentException("mode: " + mode
                    + " (expected: bodies, idle, slow-heads, unfinished)");
        }
        for (Thread t : threads) {
            t.join();
        }
        System.out.printf("FLOOD mode=%s connections=%d failed=%d answers=%d%n", mode, connects.get(), failures.get(),
                answers.get());
    }

    /** Waits out the rest of the second that began at {@code started}: the flood's pace, by its design. */
    static void pause(long started) {
        long left = 1_000_000_000L - (System.nanoTime() - started);
        if (left > 0) {
            try {
                Thread.sleep(left / 1_000_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static Thread start(Runnable r) {
        Thread t = new Thread(r);
        t.setDaemon(true);
        t.start();
        return t;
    }

    static Socket open(int port) throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress("127.0.0.1", port), 2000);
        s.setSoTimeout(5000);
        connects.incrementAndGet();
        return s;
    }

    /** An unauthenticated 1 MB body a second, each on a fresh connection. */
    static void bodies(int port, String path, long end) {
        byte[] head = ("POST " + path + " HTTP/1.1\r\nhost: x\r\nauthorization: Bearer wrong\r\n"
                + "content-type: application/json\r\ncontent-length: " + MB.length + "\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1);
        while (System.nanoTime() < end) {
            long started = System.nanoTime();
            try (Socket s = open(port)) {
                OutputStream out = s.getOutputStream();
                out.write(head);
                for (int off = 0; off < MB.length; off += 65536) {
                    out.write(MB, off, Math.min(65536, MB.length - off));
                }
                InputStream in = s.getInputStream();
                if (in.read() >= 0) {
                    answers.incrementAndGet();
                }
            } catch (IOException e) {
                failures.incrementAndGet(); // refused or reset: the server stopped reading, as it should
            }
            pause(started);
        }
    }

    /** A 15 MB body announced, 14 MB of it sent, then held until the server answers or closes, again and again. */
    static void unfinished(int port, String path, long end) {
        byte[] head = ("POST " + path + " HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                + "content-length: 15000000\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1);
        while (System.nanoTime() < end) {
            long started = System.nanoTime();
            try (Socket s = open(port)) {
                OutputStream out = s.getOutputStream();
                out.write(head);
                for (int i = 0; i < 14; i++) {
                    out.write(MB);
                }
                InputStream in = s.getInputStream();
                while (System.nanoTime() < end) {
                    try {
                        if (in.read() >= 0) {
                            answers.incrementAndGet(); // refused (503) before the body was whole
                        }
                        break;
                    } catch (java.net.SocketTimeoutException stillWaiting) {
                        // the server holds the unfinished body, as the flood wants
                    }
                }
            } catch (IOException e) {
                failures.incrementAndGet();
            }
            pause(started);
        }
    }

    /** {@code n} connections held open; with {@code trickle}, each sends its head a byte a second. */
    static void hold(int port, String path, long end, int n, boolean trickle) {
        byte[] head = ("GET " + path + " HTTP/1.1\r\nhost: x\r\nx-slow: " + "a".repeat(4096))
                .getBytes(StandardCharsets.ISO_8859_1);
        SocketChannel[] sockets = new SocketChannel[n];
        int[] sent = new int[n];
        ByteBuffer scratch = ByteBuffer.allocate(4096);
        while (System.nanoTime() < end) {
            long round = System.nanoTime();
            for (int i = 0; i < n && System.nanoTime() < end; i++) {
                try {
                    if (sockets[i] == null) {
                        sockets[i] = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
                        sockets[i].configureBlocking(false);
                        connects.incrementAndGet();
                        sent[i] = 0;
                    }
                    scratch.clear();
                    if (sockets[i].read(scratch) < 0) { // closed by the server (after its 408, or idle)
                        throw new IOException("closed by the server");
                    }
                    if (trickle) {
                        sockets[i].write(ByteBuffer.wrap(head, sent[i]++ % head.length, 1));
                    }
                } catch (IOException e) {
                    failures.incrementAndGet();
                    close(sockets[i]);
                    sockets[i] = null;
                }
            }
            pause(round);
        }
        for (SocketChannel s : sockets) {
            close(s);
        }
    }

    static void close(java.io.Closeable s) {
        if (s != null) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing a socket the flood gives up on
            }
        }
    }
}
