package dev.sextant.request;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Headers may only narrow what a tenant and a gateway cluster allow. */
class NarrowingTest {

    static Stream<Arguments> residencies() {
        List<String> eu = List.of("eu-west", "eu-central");
        return Stream.of(
                // headers, tenant default, tenant allowed, gateway required, expected (null = unrestricted)
                Arguments.of(List.of(), null, null, null, null),
                Arguments.of(List.of("us-east"), null, null, null, List.of("us-east")),
                Arguments.of(List.of(), null, eu, null, eu),
                Arguments.of(List.of(), List.of("eu-west"), eu, null, List.of("eu-west")),
                Arguments.of(List.of("eu-central"), List.of("eu-west"), eu, null, List.of("eu-central")),
                Arguments.of(List.of("us-east, eu-west"), null, eu, null, List.of("eu-west")),
                Arguments.of(List.of("us-east"), null, eu, null, List.of()),
                Arguments.of(List.of(), null, null, List.of("eu-west"), List.of("eu-west")),
                Arguments.of(List.of("us-east,eu-west"), null, null, List.of("eu-west"), List.of("eu-west")),
                Arguments.of(List.of(), null, List.of("us-east"), List.of("eu-west"), List.of()),
                // every header narrows: a blank or wider first header cancels nothing a later one names
                Arguments.of(List.of(" ", "eu-west"), null, null, null, List.of("eu-west")),
                Arguments.of(List.of("eu-west,us-east", "eu-west"), null, null, null, List.of("eu-west")),
                Arguments.of(List.of("us-east", "eu-west"), null, null, null, List.of()));
    }

    @ParameterizedTest
    @MethodSource("residencies")
    void residency_isTheIntersection_neverWiderThanAnySet(List<String> headers, List<String> dflt, List<String> allowed,
                                                          List<String> gateway, List<String> expected) {
        List<String> r = Narrowing.residency(Narrowing.requested(headers), dflt, allowed, gateway);
        assertThat(r).isEqualTo(expected);
        if (r != null) {
            for (List<String> bound : Arrays.asList(allowed, gateway)) {
                if (bound != null) {
                    assertThat(bound).containsAll(r);
                }
            }
        }
    }

    static Stream<Arguments> priorities() {
        int none = RequestMeta.NO_PRIORITY;
        int open = Narrowing.NO_CEILING;
        return Stream.of(
                // headers, tenant default, ceiling, gateway default, expected
                Arguments.of(List.of(), none, open, 0, 0),
                Arguments.of(List.of("99"), none, open, 0, 99),
                Arguments.of(List.of("99"), none, 5, 0, 5),
                Arguments.of(List.of("3"), none, 5, 0, 3),
                Arguments.of(List.of(), 2, 5, 0, 2),
                Arguments.of(List.of(), none, -1, 0, -1),
                Arguments.of(List.of("high"), 1, 5, 0, 1),
                Arguments.of(List.of("9", "1"), none, open, 0, 1),
                Arguments.of(List.of("", "99"), none, 5, 0, 5));
    }

    @ParameterizedTest
    @MethodSource("priorities")
    void priority_isCappedAtTheCeiling(List<String> headers, int dflt, int ceiling, int gatewayDefault, int expected) {
        assertThat(Narrowing.priority(headers, dflt, ceiling, gatewayDefault)).isEqualTo(expected);
    }
}
