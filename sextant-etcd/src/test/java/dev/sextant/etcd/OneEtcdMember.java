package dev.sextant.etcd;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/** A test class's etcd: one real member started before its tests and stopped after them. */
abstract class OneEtcdMember {
    @TempDir
    static java.nio.file.Path dir;
    static EtcdCluster etcd;

    @BeforeAll
    static void startEtcd() throws Exception {
        etcd = new EtcdCluster(dir, 1);
    }

    @AfterAll
    static void stopEtcd() throws Exception {
        etcd.close();
    }
}
