/*
 * A Java DefaultMQPushConsumer that measures send -> consume latency, for benchmarks/latency.py.
 *
 *   java -cp <rocketmq-client classpath>:<this class> LatencyConsumer NAMESRV GROUP TOPIC WARM TOTAL OUT_FILE
 *
 * Client defaults throughout (AVG allocation, 20 consume threads, one message per listener call,
 * CONSUME_FROM_LAST_OFFSET: the topic is new and empty when the consumer starts). Each body is
 * "<sequence number> <sender's epoch ns>"; the listener reads the clock (epoch ns, microsecond
 * precision on Linux) once when it is entered and records, for each message whose sequence number
 * is at least WARM, clock - sent. Messages below WARM (the warm-up) and anything unparsable are
 * consumed and not counted. Standard output, one line per event:
 *
 *   started <client id>
 *   owned <n>              whenever the number of owned queues of TOPIC changes (polled every 200 ms)
 *   window start           the first counted message was consumed
 *   window end             every counted sequence number (WARM .. TOTAL-1) was consumed
 *   result <duplicates>    after OUT_FILE got one latency in ns per line, in sequence order
 *
 * The JVM keeps running (consuming, uncounted) until it is killed.
 */

import java.io.BufferedWriter;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public final class LatencyConsumer {
    private static final long OWNED_POLL_MS = 200;
    private static final long MISSING = Long.MIN_VALUE;

    private static synchronized void event(String text) {
        System.out.println(text);
        System.out.flush();
    }

    private static long epochNanos() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    // getDefaultMQPushConsumerImpl() is deprecated, but the owned queues are only visible through it.
    @SuppressWarnings("deprecation")
    private static int owned(DefaultMQPushConsumer consumer, String topic) {
        int n = 0;
        for (MessageQueue mq : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl()
                .getProcessQueueTable().keySet()) {
            if (mq.getTopic().equals(topic)) {
                n++;
            }
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: LatencyConsumer NAMESRV GROUP TOPIC WARM TOTAL OUT_FILE");
            System.exit(2);
        }
        String topic = args[2];
        long warm = Long.parseLong(args[3]);
        int counted = (int) (Long.parseLong(args[4]) - warm);
        String outFile = args[5];

        AtomicLongArray latencies = new AtomicLongArray(counted);
        for (int i = 0; i < counted; i++) {
            latencies.set(i, MISSING);
        }
        AtomicInteger seen = new AtomicInteger();
        AtomicInteger duplicates = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(1);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[1]);
        consumer.setNamesrvAddr(args[0]);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            long now = epochNanos();
            for (MessageExt msg : msgs) {
                String[] parts = new String(msg.getBody(), StandardCharsets.US_ASCII).split(" ");
                if (parts.length != 2) {
                    continue;
                }
                long index = Long.parseLong(parts[0]) - warm;
                if (index < 0 || index >= counted) {
                    continue;
                }
                if (!latencies.compareAndSet((int) index, MISSING, now - Long.parseLong(parts[1]))) {
                    duplicates.incrementAndGet();
                    continue;
                }
                int n = seen.incrementAndGet();
                if (n == 1) {
                    event("window start");
                }
                if (n == counted) {
                    event("window end");
                    done.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        event("started " + consumer.buildMQClientId());

        int last = -1;
        while (!done.await(OWNED_POLL_MS, TimeUnit.MILLISECONDS)) {
            int now = owned(consumer, topic);
            if (now != last) {
                event("owned " + now);
                last = now;
            }
        }
        try (Writer out = new BufferedWriter(
                new OutputStreamWriter(new FileOutputStream(outFile), StandardCharsets.US_ASCII))) {
            for (int i = 0; i < counted; i++) {
                out.write(Long.toString(latencies.get(i)));
                out.write('\n');
            }
        }
        event("result " + duplicates.get());
        Thread.sleep(Long.MAX_VALUE);
    }
}
