package seqgate.peer.kstreams;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The seqgate bench's Kafka Streams peer: per object identity, keep the highest
 * position seen in a changelogged RocksDB store and forward only events whose
 * position is greater than the stored one, under exactly_once_v2.
 *
 * <p>stdout carries only the JSON lines of the peer contract
 * (../README.md); everything else goes to stderr.
 */
public final class SequencerPeer {

    static final String STORE = "positions";

    private static final PrintStream OUT = System.out;
    private static final AtomicLong ACCEPTED = new AtomicLong();
    private static final AtomicLong DUPLICATE = new AtomicLong();
    private static final AtomicLong STALE = new AtomicLong();
    private static final AtomicBoolean FIRST_SEEN = new AtomicBoolean();

    private SequencerPeer() {
    }

    public static void main(String[] argv) throws Exception {
        // slf4j-simple reads these when the first logger is created: WARN and above, to stderr.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");

        Map<String, String> args = parseArgs(argv);
        Schema schema = new Schema.Parser().parse(new File(args.get("schema")));

        Topology topology = buildTopology(args.get("input-topic"), args.get("output-topic"), schema);
        KafkaStreams streams = new KafkaStreams(topology, streamsConfig(args));

        AtomicBoolean shuttingDown = new AtomicBoolean();
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("kafka-streams peer: stream thread failed: " + e);
            e.printStackTrace(System.err);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setStateListener((newState, oldState) -> {
            if (newState == KafkaStreams.State.ERROR
                    || (newState == KafkaStreams.State.NOT_RUNNING && !shuttingDown.get())) {
                stopped.countDown();
            }
        });

        ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "peer-counts");
            t.setDaemon(true);
            return t;
        });
        ticker.scheduleAtFixedRate(() -> {
            if (FIRST_SEEN.get()) {
                printCounts();
            }
        }, 1000, 1000, TimeUnit.MILLISECONDS);

        // The documented idiom: close the KafkaStreams instance from a JVM shutdown hook
        // (SIGTERM), which commits the open transaction and flushes the stores.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            shuttingDown.set(true);
            boolean clean = false;
            try {
                clean = streams.close(Duration.ofSeconds(30));
            } catch (RuntimeException e) {
                System.err.println("kafka-streams peer: close failed: " + e);
            }
            ticker.shutdownNow();
            printCounts();
            System.err.println("kafka-streams peer: closed" + (clean ? "" : " (timed out)"));
            System.err.flush();
            // A JVM ended by SIGTERM would otherwise exit 143; the contract asks for 0.
            Runtime.getRuntime().halt(clean ? 0 : 1);
        }, "peer-shutdown-hook"));

        streams.start();
        stopped.await();
        if (!shuttingDown.get()) {
            System.err.println("kafka-streams peer: streams stopped in state " + streams.state());
            streams.close(Duration.ofSeconds(30));
            printCounts();
            Runtime.getRuntime().halt(1);
        }
    }

    static Topology buildTopology(String input, String output, Schema schema) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .process(new PositionFilterSupplier(schema))
                .to(output, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
        return builder.build();
    }

    static Properties streamsConfig(Map<String, String> args) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args.get("application-id"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap-servers"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.parseLong(args.get("commit-interval-ms")));
        p.put(StreamsConfig.STATE_DIR_CONFIG, args.get("state-dir"));
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // -1: internal topics (changelog) take the broker's default replication factor.
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, -1);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG),
            Integer.parseInt(args.getOrDefault("session-timeout-ms", "45000")));
        return p;
    }

    /** Supplies the processor and connects the store it uses (ConnectedStoreProvider). */
    static final class PositionFilterSupplier implements ProcessorSupplier<byte[], byte[], byte[], byte[]> {
        private final Schema schema;

        PositionFilterSupplier(Schema schema) {
            this.schema = schema;
        }

        @Override
        public Processor<byte[], byte[], byte[], byte[]> get() {
            return new PositionFilter(schema);
        }

        @Override
        public Set<StoreBuilder<?>> stores() {
            // Persistent RocksDB store; logging (the changelog topic) is on by default.
            StoreBuilder<KeyValueStore<String, String>> positions = Stores.keyValueStoreBuilder(
                    Stores.persistentKeyValueStore(STORE), Serdes.String(), Serdes.String());
            return Set.of(positions);
        }
    }

    static final class PositionFilter implements Processor<byte[], byte[], byte[], byte[]> {
        private final Schema schema;
        private ProcessorContext<byte[], byte[]> context;
        private KeyValueStore<String, String> store;
        private BinaryMessageDecoder<GenericRecord> decoder;
        private GenericRecord reuse;

        PositionFilter(Schema schema) {
            this.schema = schema;
        }

        @Override
        public void init(ProcessorContext<byte[], byte[]> context) {
            this.context = context;
            this.store = context.getStateStore(STORE);
            this.decoder = new BinaryMessageDecoder<>(GenericData.get(), schema);
        }

        @Override
        public void process(Record<byte[], byte[]> record) {
            if (FIRST_SEEN.compareAndSet(false, true)) {
                emit("{\"first_record_ms\": " + System.currentTimeMillis() + "}");
            }
            GenericRecord event;
            try {
                event = decoder.decode(record.value(), reuse);
                reuse = event;
            } catch (IOException | RuntimeException e) {
                // Not in the bench; a fatal error here would stop the whole app, so skip it loudly.
                System.err.println("kafka-streams peer: undecodable value skipped: " + e);
                return;
            }
            Object rawPosition = event.get("position");
            if (rawPosition == null || record.key() == null) {
                STALE.incrementAndGet();
                return;
            }
            String position = rawPosition.toString();
            String identity = new String(record.key(), StandardCharsets.UTF_8);
            String stored = store.get(identity);
            int cmp = stored == null ? 1 : comparePositions(position, stored);
            if (cmp > 0) {
                store.put(identity, position);
                context.forward(record);
                ACCEPTED.incrementAndGet();
            } else if (cmp == 0) {
                DUPLICATE.incrementAndGet();
            } else {
                STALE.incrementAndGet();
            }
        }
    }

    /** AWS's sequencer rule: right-pad the shorter with '0', compare case-insensitively. */
    static int comparePositions(String a, String b) {
        int n = Math.max(a.length(), b.length());
        for (int i = 0; i < n; i++) {
            char ca = i < a.length() ? Character.toLowerCase(a.charAt(i)) : '0';
            char cb = i < b.length() ? Character.toLowerCase(b.charAt(i)) : '0';
            if (ca != cb) {
                return ca < cb ? -1 : 1;
            }
        }
        return 0;
    }

    static void printCounts() {
        emit("{\"accepted\": " + ACCEPTED.get() + ", \"duplicate\": " + DUPLICATE.get()
                + ", \"stale\": " + STALE.get() + "}");
    }

    static void emit(String line) {
        synchronized (OUT) {
            OUT.println(line);
            OUT.flush();
        }
    }

    static Map<String, String> parseArgs(String[] argv) {
        String[] required = {"bootstrap-servers", "input-topic", "output-topic", "application-id",
            "state-dir", "commit-interval-ms", "schema"};
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--")) {
                usage("unexpected argument: " + a);
            }
            String name = a.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else {
                if (i + 1 >= argv.length) {
                    usage("missing value for --" + name);
                }
                value = argv[++i];
            }
            args.put(name, value);
        }
        for (String r : required) {
            if (!args.containsKey(r)) {
                usage("missing --" + r);
            }
        }
        return args;
    }

    private static void usage(String problem) {
        System.err.println("kafka-streams peer: " + problem);
        System.err.println("usage: java -jar seqgate-peer-kafka-streams.jar --bootstrap-servers HOST:PORT"
                + " --input-topic T --output-topic O --application-id A --state-dir DIR"
                + " --commit-interval-ms MS --schema FILE [--session-timeout-ms MS]");
        System.exit(2);
    }
}
