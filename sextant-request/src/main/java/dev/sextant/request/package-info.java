/**
 * The request path (data plane): per request, classify it into a class of the held snapshot, apply
 * admission, choose an engine by weighted consistent hashing of its affinity key with bounded load
 * and local outlier ejection, and decide retries under a utilization-aware retry budget.
 *
 * <p>Entry points: {@link dev.sextant.request.DataPlane} (the facade a gateway or the simulator
 * calls), {@link dev.sextant.request.HttpFields} and {@link dev.sextant.request.RequestMeta} (what a
 * request is), {@link dev.sextant.request.Decision} (the answer), and
 * {@link dev.sextant.snapshot.SlotTable} (the consistent-hashing table on its own, which the
 * snapshot carries). The rules are in
 * {@code docs/request-path.md}.
 *
 * <p>Pure Java: no I/O, no locks on the request path, time only from a
 * {@link dev.sextant.request.Ticker}, randomness only from a seed.
 */
package dev.sextant.request;
