package dev.sextant.server.auth;

/**
 * Who a control-plane token speaks for, and so what it may do: an operator (every endpoint, every gateway cluster)
 * or one gateway cluster (its own snapshot view and its own reports, nothing else).
 *
 * @param gatewayCluster the gateway cluster a gateway's token is for; null for an operator
 */
public record Principal(String gatewayCluster) {
    /** An operator, and the single shared token of the simple mode: everything. */
    public static final Principal OPERATOR = new Principal(null);

    public Principal {
        if (gatewayCluster != null && gatewayCluster.isBlank()) {
            throw new IllegalArgumentException("gateway_cluster: '" + gatewayCluster
                    + "' (expected: a gateway cluster id)");
        }
    }

    /** A gateway cluster's token. */
    public static Principal gateway(String gatewayCluster) {
        if (gatewayCluster == null) {
            throw new IllegalArgumentException("gateway_cluster: missing (expected: a gateway cluster id)");
        }
        return new Principal(gatewayCluster);
    }

    /** True for an operator. */
    public boolean operator() {
        return gatewayCluster == null;
    }

    /** Whether it may read the snapshot view of, and report for, gateway cluster {@code id}. */
    public boolean mayActFor(String id) {
        return gatewayCluster == null || gatewayCluster.equals(id);
    }

    @Override
    public String toString() {
        return gatewayCluster == null ? "operator" : "gateway cluster " + gatewayCluster;
    }
}
