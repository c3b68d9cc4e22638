package dev.sextant.request;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DataPlaneOptionsTest {

    static Stream<Arguments> invalid() {
        return Stream.of(
                Arguments.of("max_snapshot_age", change(b -> b.maxSnapshotAge(Duration.ZERO))),
                Arguments.of("max_snapshot_age", change(b -> b.maxSnapshotAge(Duration.ofDays(365 * 300)))),
                Arguments.of("control_plane_cadence", change(b -> b.controlPlaneCadence(Duration.ofSeconds(-1)))),
                Arguments.of("bounded_load_epsilon", change(b -> b.boundedLoadEpsilon(-0.1))),
                Arguments.of("ejection_max", change(b -> b.ejectionMax(Duration.ofSeconds(1)))),
                Arguments.of("max_ejected_fraction", change(b -> b.maxEjectedFraction(1.5))),
                Arguments.of("max_attempts", change(b -> b.maxAttempts(0))),
                Arguments.of("retry_token_cap", change(b -> b.retryTokenCap(0.5))),
                Arguments.of("max_in_flight_per_engine", change(b -> b.maxInFlightPerEngine(0))),
                Arguments.of("in_flight_per_capacity", change(b -> b.inFlightPerCapacity(1))),
                Arguments.of("in_flight_per_capacity", change(b -> b.inFlightPerCapacity(Double.NaN))));
    }

    static UnaryOperator<DataPlaneOptions.Builder> change(UnaryOperator<DataPlaneOptions.Builder> c) {
        return c;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalid")
    void build_invalidValue_namesTheField(String field, UnaryOperator<DataPlaneOptions.Builder> change) {
        assertThatThrownBy(() -> change.apply(DataPlaneOptions.builder()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(field + ": ");
    }

    @Test
    void toBuilder_roundTripsEveryValue() {
        DataPlaneOptions o = DataPlaneOptions.builder().boundedLoadEpsilon(0.5).seed(7).maxAttempts(2)
                .controlPlaneCadence(Duration.ofSeconds(30)).build();
        assertThat(o.toBuilder().build()).isEqualTo(o);
        assertThat(DataPlaneOptions.defaults().boundedLoadEpsilon()).isEqualTo(0.25);
        assertThat(DataPlaneOptions.defaults().maxEjectedFraction()).isEqualTo(0.1);
    }
}
