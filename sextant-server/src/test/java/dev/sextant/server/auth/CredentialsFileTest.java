package dev.sextant.server.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sextant.config.ConfigException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/** The credentials file's form: what it accepts, and each mistake named by file, line and field. */
public class CredentialsFileTest {
    static final String A = sha256("token-a");
    static final String B = sha256("token-b");

    @Test
    void tokens_speakForTheirPrincipals_andNothingElseIsAccepted() throws Exception {
        Credentials c = Credentials.parse("tokens:\n  - {sha256: " + A + ", role: operator}\n"
                + "  - {sha256: sha256:" + B.toUpperCase() + ", role: gateway, gateway_cluster: east}\n", "c.yaml");
        assertThat(c.authenticate("Bearer token-a")).isEqualTo(Principal.OPERATOR);
        assertThat(c.authenticate("bearer token-b")).isEqualTo(Principal.gateway("east"));
        assertThat(c.authenticate("BEARER  token-b ")).isEqualTo(Principal.gateway("east"));
        for (String wrong : new String[] {null, "", "Bearer", "Bearer ", "Basic token-a", "token-a", "Bearer token-",
            "Bearer token-a0", "Bearer " + A}) {
            assertThat(c.authenticate(wrong)).as(String.valueOf(wrong)).isNull();
        }
        assertThat(c.size()).isEqualTo(2);
        assertThat(c.summary()).isEqualTo("gateway cluster east: 1, operator: 1");
        assertThat(c.toString()).doesNotContain(A.substring(0, 16)).doesNotContain(B.substring(0, 16).toUpperCase());
        assertThat(Principal.gateway("east").mayActFor("east")).isTrue();
        assertThat(Principal.gateway("east").mayActFor("west")).isFalse();
        assertThat(Principal.OPERATOR.mayActFor("west")).isTrue();
    }

    static Stream<Arguments> mistakes() {
        return Stream.of(
                Arguments.of("", "c.yaml:1: empty document"),
                Arguments.of("- x\n", "c.yaml:1: a list (expected: a map with tokens: [...])"),
                Arguments.of("token:\n  - {sha256: " + A + ", role: operator}\n", "c.yaml:1: token: unknown key 'token'"),
                Arguments.of("tokens: []\n", "c.yaml:1: tokens: empty (expected: at least one token)"),
                Arguments.of("tokens: x\n", "c.yaml:1: tokens: 'x' (expected: a list)"),
                Arguments.of("tokens:\n  - {role: operator}\n", "c.yaml:2: tokens[0].sha256: missing (expected: a string)"),
                Arguments.of("tokens:\n  - operator\n", "c.yaml:2: tokens[0]: 'operator' (expected: a map of sha256"),
                Arguments.of("tokens:\n  - sha256: abc\n    role: operator\n",
                        "c.yaml:2: tokens[0].sha256: 'abc' (expected: the SHA-256 of the token, 64 hexadecimal digits"),
                Arguments.of("tokens:\n  - sha256: " + A.replace(A.charAt(3), 'g') + "\n    role: operator\n",
                        "c.yaml:2: tokens[0].sha256: '"),
                Arguments.of("tokens:\n  - sha256: " + A + "\n    role: admin\n",
                        "c.yaml:3: tokens[0].role: 'admin' (expected: operator or gateway)"),
                Arguments.of("tokens:\n  - sha256: " + A + "\n", "c.yaml:2: tokens[0].role: missing"),
                Arguments.of("tokens:\n  - sha256: " + A + "\n    role: gateway\n",
                        "c.yaml:2: tokens[0].gateway_cluster: missing (expected: the gateway cluster this token is for)"),
                Arguments.of("tokens:\n  - sha256: " + A + "\n    role: operator\n    gateway_cluster: east\n",
                        "c.yaml:4: tokens[0].gateway_cluster: 'east' set for an operator (expected: only with role: gateway)"),
                Arguments.of("tokens:\n  - sha256: " + A + "\n    role: operator\n    token: token-a\n",
                        "c.yaml:4: tokens[0].token: unknown key 'token'"),
                Arguments.of("tokens:\n  - {sha256: " + A + ", role: operator}\n  - {sha256: " + A.toUpperCase()
                        + ", role: gateway, gateway_cluster: east}\n",
                        "c.yaml:3: tokens[1].sha256: the same token as tokens[0] (expected: each token once)"));
    }

    @ParameterizedTest
    @MethodSource("mistakes")
    void aMistake_isRefusedWithFileLineAndField(String yaml, String message) {
        assertThatThrownBy(() -> Credentials.parse(yaml, "c.yaml")).isInstanceOf(ConfigException.class)
                .satisfies(e -> assertThat(((ConfigException) e).problems().get(0).toString()).startsWith(message));
    }

    /** The hex SHA-256 of {@code token}, as a credentials file holds it. */
    public static String sha256(String token) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(token.getBytes(StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
