package dev.sextant.etcd;

import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;

/**
 * Sextant's keys under a fleet's prefix P (docs/etcd.md, "Keys"):
 * <ul>
 *   <li>{@code P/leader}: the leader's URL, under its lease; its create revision identifies one term of leadership,
 *       and every publication is conditional on it (fencing);</li>
 *   <li>{@code P/members/<url>}: every control plane's URL, under its lease (gateways report to all of them);</li>
 *   <li>{@code P/version}: the highest snapshot version reserved, 20 digits so that etcd's byte order is numeric
 *       order and a transaction can require the next version to be above it;</li>
 *   <li>{@code P/views/<gateway cluster>}: that gateway cluster's view of the current snapshot (gateways watch it);</li>
 *   <li>{@code P/chunks/<gateway cluster>/<version>/<i>}: the parts of a view too large for one value;</li>
 *   <li>{@code P/engines/<id>}: a registered engine ({@code Registration#json}), under its registrar's lease.</li>
 * </ul>
 */
final class Keys {
    final ByteSequence leader;
    final ByteSequence version;
    final String members;
    final String engines;
    private final String prefix;

    Keys(String prefix) {
        this.prefix = prefix;
        this.leader = bytes(prefix + "/leader");
        this.version = bytes(prefix + "/version");
        this.members = prefix + "/members/";
        this.engines = prefix + "/engines/";
    }

    ByteSequence engine(String id) {
        return bytes(engines + id);
    }

    ByteSequence member(String url) {
        return bytes(members + url);
    }

    ByteSequence view(String gatewayCluster) {
        return bytes(prefix + "/views/" + gatewayCluster);
    }

    /** The prefix of a gateway cluster's chunks, all versions. */
    String chunks(String gatewayCluster) {
        return prefix + "/chunks/" + gatewayCluster + "/";
    }

    ByteSequence chunk(String gatewayCluster, long version, int i) {
        return bytes(chunks(gatewayCluster) + padded(version) + "/" + String.format("%06d", i));
    }

    /** A version as 20 digits: byte order is numeric order. */
    static String padded(long version) {
        return String.format("%020d", version);
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }
}
