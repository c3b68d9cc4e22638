package dev.sextant.server.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** What of an engine's response head reaches the client: its end-to-end fields, not those of its connection. */
class GatewayResponseHeadersTest {

    @Test
    void hopByHopFields_stayOnTheEngineSide_endToEndOnesPassThrough() throws Exception {
        String body = "{\"id\":\"c\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[]}";
        String answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: " + body.length() + "\r\n"
                + "connection: keep-alive, x-engine-private\r\nx-engine-private: secret\r\nkeep-alive: timeout=5\r\n"
                + "proxy-connection: keep-alive\r\nupgrade: h2c\r\nx-end-to-end: kept\r\ncache-control: no-store\r\n\r\n"
                + body;
        try (Fleet fleet = new Fleet(1);
             RawEngine engine = new RawEngine(answer, false);
             Gateway g = Gateway.start(GatewayConfig.defaults("gw").withAccessLog(false),
                     SnapshotSource.fixed(engine.behindEveryEngine(fleet.snapshot())), 1);
             RawHttp client = new RawHttp(g.port(), 10_000)) {
            for (int i = 0; i < 2; i++) { // the second answer comes over the engine connection the first one left pooled
                RawHttp.Answer a = client.send(RawHttp.chatRequest(Fleet.chat("h", false, 1))).read();
                assertThat(a.status()).isEqualTo(200);
                assertThat(a.body()).isEqualTo(body);
                assertThat(a.headers()).as("answer %d", i)
                        .doesNotContainKeys("x-engine-private", "keep-alive", "proxy-connection", "upgrade",
                                "transfer-encoding")
                        .containsEntry("x-end-to-end", "kept").containsEntry("cache-control", "no-store")
                        .containsEntry("content-length", Integer.toString(body.length()))
                        .containsEntry("x-sextant-attempts", "1").containsKey("x-request-id");
                assertThat(a.header("connection")).as("the client connection's own").isNotEqualToIgnoringCase("close");
            }
        }
    }
}
