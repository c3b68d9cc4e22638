package dev.sextant.server.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SelectStrategy;
import io.netty.channel.epoll.Epoll;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class TransportTest {
    @Test
    void linuxX86GatewaysRunOnNativeEpoll() {
        boolean linuxX86 = System.getProperty("os.name").toLowerCase().contains("linux")
                && System.getProperty("os.arch").matches("amd64|x86_64");
        if (linuxX86) {
            assertThat(Epoll.unavailabilityCause()).as("the native library shipped for linux-x86_64 loads").isNull();
            assertThat(Transport.current()).isEqualTo(Transport.EPOLL);
        } else {
            assertThat(Transport.current()).isEqualTo(Transport.NIO);
        }
    }

    @Test
    void channelClassesMatchTheirTransport() {
        assertThat(Transport.EPOLL.serverChannel().getSimpleName()).startsWith("Epoll");
        assertThat(Transport.EPOLL.socketChannel().getSimpleName()).startsWith("Epoll");
        assertThat(Transport.NIO.serverChannel().getSimpleName()).startsWith("Nio");
        assertThat(Transport.NIO.socketChannel().getSimpleName()).startsWith("Nio");
    }

    @Test
    void spinStrategy_handlesWhatIsReady_elseGoesRoundWithoutBlocking() throws Exception {
        assertThat(Transport.SPIN.calculateStrategy(() -> 3, false)).isEqualTo(3);
        assertThat(Transport.SPIN.calculateStrategy(() -> 0, false)).isEqualTo(SelectStrategy.CONTINUE);
        assertThat(Transport.SPIN.calculateStrategy(() -> 0, true)).isEqualTo(SelectStrategy.CONTINUE);
    }

    @Test
    void busyPollingLoops_runTimersAndTasks_andCarryBytes_onEveryTransportHere() throws Exception {
        List<Transport> here = new ArrayList<>(List.of(Transport.NIO));
        if (Epoll.isAvailable()) {
            here.add(Transport.EPOLL);
        }
        for (Transport t : here) {
            EventLoopGroup group = t.group(1, true);
            try {
                // a timer with no socket activity at all
                CountDownLatch timer = new CountDownLatch(1);
                group.next().schedule(timer::countDown, 20, TimeUnit.MILLISECONDS);
                assertThat(timer.await(10, TimeUnit.SECONDS)).as("%s: a scheduled task ran", t).isTrue();
                assertThat(group.next().submit(() -> 42).get(10, TimeUnit.SECONDS)).isEqualTo(42);
                assertThat(echo(t, group, "ping")).as("%s: bytes echoed", t).isEqualTo("ping");
            } finally {
                group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).await(10, TimeUnit.SECONDS);
            }
        }
    }

    /** Sends {@code text} to an echo server on loopback, both ends on {@code group}; returns what came back. */
    private static String echo(Transport t, EventLoopGroup group, String text) throws Exception {
        Channel server = new ServerBootstrap().group(group).channel(t.serverChannel())
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ctx.writeAndFlush(msg);
                    }
                }).bind("127.0.0.1", 0).sync().channel();
        CompletableFuture<String> back = new CompletableFuture<>();
        try {
            Channel client = new Bootstrap().group(group).channel(t.socketChannel())
                    .handler(new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            ByteBuf b = (ByteBuf) msg;
                            back.complete(b.toString(StandardCharsets.UTF_8));
                            b.release();
                        }
                    }).connect((InetSocketAddress) server.localAddress()).sync().channel();
            client.writeAndFlush(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
            String answer = back.get(10, TimeUnit.SECONDS);
            client.close().sync();
            return answer;
        } finally {
            server.close().sync();
        }
    }
}
