package dev.sextant.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sextant.topology.Topology;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.representer.Representer;

/**
 * A topology written by a standard YAML library, which emits an anchor for a value it meets twice and an alias for
 * each later use ({@code &id001}, {@code *id001}, as PyYAML does), loads to the same {@link Topology} as the file
 * written out.
 */
class AnchorsPropertiesTest {

    @Property(tries = 50)
    void topologyDumpedWithAnchorsForRepeatedValues_loadsEqualToTheWrittenOutFile(@ForAll long seed,
                                                                                 @ForAll boolean flow) throws Exception {
        Path talk = Path.of("..", "examples", "talk.yaml");
        Topology written = TopologyLoader.load(talk);
        Yaml yaml = new Yaml(new SafeConstructor(new LoaderOptions()));
        Object tree = yaml.load(Files.readString(talk));

        Object shared = share(tree, new HashMap<>(), new Random(seed), new int[1]);
        DumperOptions options = new DumperOptions();
        options.setDefaultFlowStyle(flow ? DumperOptions.FlowStyle.FLOW : DumperOptions.FlowStyle.BLOCK);
        String dumped = new Yaml(new SafeConstructor(new LoaderOptions()), new Representer(options), options)
                .dump(shared);

        assertThat(dumped).as("the dump uses anchors and aliases").contains("&id").contains("*id");
        assertThat(TopologyLoader.load(dumped, "dumped.yaml")).isEqualTo(written);
    }

    /**
     * {@code value} with equal mappings and lists made one object (so that the dumper writes an anchor and aliases),
     * each first copy kept or not at random; always shares at least the first repeat, so that every try has an alias.
     */
    private static Object share(Object value, Map<Object, Object> seen, Random random, int[] shared) {
        Object copy;
        if (value instanceof Map<?, ?> m) {
            Map<Object, Object> out = new LinkedHashMap<>();
            m.forEach((k, v) -> out.put(k, share(v, seen, random, shared)));
            copy = out;
        } else if (value instanceof List<?> l) {
            List<Object> out = new ArrayList<>();
            l.forEach(v -> out.add(share(v, seen, random, shared)));
            copy = out;
        } else {
            return value;
        }
        Object earlier = seen.get(copy);
        if (earlier != null && (shared[0] == 0 || random.nextBoolean())) {
            shared[0]++;
            return earlier;
        }
        seen.putIfAbsent(copy, copy);
        return copy;
    }
}
