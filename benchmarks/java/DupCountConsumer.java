/*
 * A Java DefaultMQPushConsumer that records every delivery, for benchmarks/rebalance_duplicates.py.
 *
 *   java -cp <rocketmq-client classpath>:<this class> DupCountConsumer NAMESRV GROUP TOPIC OUT_FILE CONSUME_MS
 *        API_TIMEOUT_MS [wait-for-go]
 *
 * Client defaults throughout (AVG allocation, 20 consume threads, one message per listener call,
 * offsets persisted every 5 s, rebalance every 20 s and on NOTIFY_CONSUMER_IDS_CHANGED), except
 * that a new group starts from the first offset and mqClientApiTimeout (name-server and admin
 * calls, default 3000) is API_TIMEOUT_MS. Each delivery appends "<body> <epoch ms>\n" to
 * OUT_FILE when the listener is entered; the listener then sleeps CONSUME_MS (the "work") and
 * returns CONSUME_SUCCESS. With "wait-for-go" it calls start() only once a line arrives on stdin
 * (the JVM is up and the consumer built: joining the group is then quick). Standard output gets
 * one line per event, each starting with epoch ms:
 *
 *   <ms> ready                                  with wait-for-go: waiting for the line
 *   <ms> started <client id>
 *   <ms> owned <n> <broker>:<queue id>,...     whenever the owned queues of TOPIC change
 *   <ms> stopping                               SIGTERM: the shutdown hook runs consumer.shutdown()
 *   <ms> stopped
 */

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public final class DupCountConsumer {
    private static final long OWNED_POLL_MS = 100;

    private static synchronized void event(String text) {
        System.out.println(System.currentTimeMillis() + " " + text);
        System.out.flush();
    }

    /**
     * Appends one line per delivery, unbuffered: a line is in the file once written, and listener
     * calls that still start while the JVM shuts down are recorded too (the OS closes the file).
     */
    private static final class Recorder {
        private final OutputStream out;

        Recorder(String path) throws IOException {
            this.out = new FileOutputStream(path, true);
        }

        synchronized void record(byte[] body) {
            byte[] line = (new String(body, StandardCharsets.UTF_8) + " " + System.currentTimeMillis() + "\n")
                .getBytes(StandardCharsets.UTF_8);
            try {
                out.write(line);
            } catch (IOException e) {
                throw new IllegalStateException("cannot record a delivery", e);
            }
        }
    }

    private static String describe(List<MessageQueue> queues) {
        List<String> names = new ArrayList<>();
        for (MessageQueue mq : queues) {
            names.add(mq.getBrokerName() + ":" + mq.getQueueId());
        }
        return queues.size() + " " + String.join(",", names);
    }

    // getDefaultMQPushConsumerImpl() is deprecated, but the owned queues are only visible through it.
    @SuppressWarnings("deprecation")
    public static void main(String[] args) throws Exception {
        boolean gated = args.length == 7 && args[6].equals("wait-for-go");
        if (args.length != 6 && !gated) {
            System.err.println(
                "usage: DupCountConsumer NAMESRV GROUP TOPIC OUT_FILE CONSUME_MS API_TIMEOUT_MS [wait-for-go]");
            System.exit(2);
        }
        String namesrv = args[0];
        String group = args[1];
        String topic = args[2];
        Recorder recorder = new Recorder(args[3]);
        long consumeMs = Long.parseLong(args[4]);
        int apiTimeoutMs = Integer.parseInt(args[5]);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setMqClientApiTimeout(apiTimeoutMs);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt msg : msgs) {
                recorder.record(msg.getBody());
            }
            if (consumeMs > 0) {
                try {
                    Thread.sleep(consumeMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            event("stopping");
            consumer.shutdown(); // persists the offsets of the owned queues and unregisters
            event("stopped");
            stopped.countDown();
        }, "dup-count-shutdown"));

        if (gated) {
            event("ready");
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        }
        consumer.start();
        event("started " + consumer.buildMQClientId());

        String last = null;
        while (stopped.getCount() > 0) {
            List<MessageQueue> owned = new ArrayList<>();
            for (MessageQueue mq : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl()
                    .getProcessQueueTable().keySet()) {
                if (mq.getTopic().equals(topic)) {
                    owned.add(mq);
                }
            }
            owned.sort(null);
            String now = describe(owned);
            if (!now.equals(last)) {
                event("owned " + now);
                last = now;
            }
            stopped.await(OWNED_POLL_MS, TimeUnit.MILLISECONDS);
        }
    }
}
