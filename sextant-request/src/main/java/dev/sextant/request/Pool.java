package dev.sextant.request;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * This gateway's requests on the engines of one pool of models that share engines ({@code Compiled.Pools}): the
 * count bounded load and spacing divide among the pool's engines. Kept across snapshots, by pool name.
 */
final class Pool {
    /** Requests in flight on the pool's engines. */
    final AtomicInteger inFlight = new AtomicInteger();
}
