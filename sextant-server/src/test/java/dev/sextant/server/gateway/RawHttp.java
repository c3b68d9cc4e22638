package dev.sextant.server.gateway;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A client that writes exactly the bytes it is given and reads answers off the socket by hand, so that a test can
 * send what no well-behaved client would (conflicting lengths, a head a byte at a time) and see exactly what came
 * back, including a close.
 */
final class RawHttp implements AutoCloseable {
    final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    /** One answer as read from the wire; {@code body} is de-chunked. */
    record Answer(int status, Map<String, String> headers, String body) {
        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    RawHttp(int port, int readTimeoutMillis) throws IOException {
        this(port, readTimeoutMillis, 0);
    }

    /** With a kernel receive buffer of {@code receiveBufferBytes} (0: the OS default). */
    RawHttp(int port, int readTimeoutMillis, int receiveBufferBytes) throws IOException {
        socket = new Socket();
        if (receiveBufferBytes > 0) {
            socket.setReceiveBufferSize(receiveBufferBytes);
        }
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
        socket.setSoTimeout(readTimeoutMillis);
        socket.setTcpNoDelay(true);
        in = socket.getInputStream();
        out = socket.getOutputStream();
    }

    /** A chat completion request for {@code jsonBody}, as a well-behaved client writes it. */
    static String chatRequest(String jsonBody) {
        return "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: "
                + jsonBody.length() + "\r\n\r\n" + jsonBody;
    }

    RawHttp send(String text) throws IOException {
        return send(text.getBytes(StandardCharsets.ISO_8859_1));
    }

    RawHttp send(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
        return this;
    }

    /** The next answer, or null when the connection ended before one began. */
    Answer read() throws IOException {
        return read(false);
    }

    private Answer read(boolean toClose) throws IOException {
        String status = line();
        if (status == null) {
            return null;
        }
        String[] parts = status.split(" ", 3);
        int code = Integer.parseInt(parts[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        for (String h; !(h = line()).isEmpty(); ) {
            int colon = h.indexOf(':');
            headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            for (int n; (n = Integer.parseInt(line().split(";")[0].trim(), 16)) > 0; ) {
                body.write(in.readNBytes(n));
                line();
            }
            while (!line().isEmpty()) {
                // trailers
            }
        } else if (headers.containsKey("content-length")) {
            body.write(in.readNBytes(Integer.parseInt(headers.get("content-length"))));
        } else if (toClose) {
            body.write(in.readAllBytes());
        }
        return new Answer(code, headers, body.toString(StandardCharsets.UTF_8));
    }

    /** As {@link #read()}, and an answer with neither a length nor chunks runs to the end of the connection. */
    Answer readToClose() throws IOException {
        return read(true);
    }

    /** True when the peer closed the connection (end of stream or reset) with nothing more to read. */
    boolean closedByPeer() throws IOException {
        try {
            return in.read() < 0;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        }
    }

    /** Reads and drops whatever arrived; true when the connection then ended (end of stream or reset). */
    boolean closedByPeerAfterDraining() throws IOException {
        byte[] buf = new byte[16384];
        try {
            while (in.read(buf) >= 0) {
                // drop
            }
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        }
    }

    private String line() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int c; (c = in.read()) >= 0; ) {
            if (c == '\n') {
                String s = b.toString(StandardCharsets.ISO_8859_1);
                return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
            }
            b.write(c);
        }
        if (b.size() == 0) {
            return null;
        }
        throw new IOException("connection ended in the middle of a line: " + b.toString(StandardCharsets.ISO_8859_1));
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
