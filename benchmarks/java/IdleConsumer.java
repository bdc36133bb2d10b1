/*
 * A Java DefaultMQPushConsumer that owns many idle queues, for benchmarks/idle_scale.py.
 *
 *   java -cp <rocketmq-client classpath>:<this class> IdleConsumer NAMESRV GROUP TOPICS EXPECTED
 *
 * Client defaults throughout (AVG allocation, long polling: the broker holds each pull up to 15 s,
 * offsets persisted every 5 s, rebalance every 20 s, heartbeat every 30 s). TOPICS is a comma
 * separated list; EXPECTED the number of their queues the consumer should own (its group's retry
 * topic is not counted). Standard output, one line per event:
 *
 *   started <client id>
 *   owned <n>           whenever the number of owned queues of TOPICS changes
 *   pulling <n>         all EXPECTED queues are owned and every one of them began a pull after the
 *                       moment they were all first seen owned
 *   ready <n>           every one of them began another pull after "pulling": a whole long-polling
 *                       round (pull held, answered, pulled again) was seen on every queue
 *   check <n> <m>       every 10 s once ready: n owned, m of them with no pull begun for 30 s
 *
 * Before "ready" the queues are checked every 500 ms; the JVM runs until it is killed.
 */

import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.common.message.MessageQueue;

public final class IdleConsumer {
    private static final long STARTING_POLL_MS = 500;
    private static final long READY_POLL_MS = 10_000;
    private static final long STALE_MS = 30_000;

    private static void event(String text) {
        System.out.println(text);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: IdleConsumer NAMESRV GROUP TOPICS EXPECTED");
            System.exit(2);
        }
        Set<String> topics = new HashSet<>();
        int expected = Integer.parseInt(args[3]);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[1]);
        consumer.setNamesrvAddr(args[0]);
        for (String topic : args[2].split(",")) {
            topics.add(topic);
            consumer.subscribe(topic, "*");
        }
        consumer.registerMessageListener(
            (MessageListenerConcurrently) (msgs, context) -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
        consumer.start();
        event("started " + consumer.buildMQClientId());

        int last = -1;
        long since = -1; // pulls begun after this count; -1 while not all queues are owned
        int stage = 0; // 0: owning, 1: pulling, 2: ready
        while (true) {
            Thread.sleep(stage == 2 ? READY_POLL_MS : STARTING_POLL_MS);
            long now = System.currentTimeMillis();
            int owned = 0;
            int pulledSince = 0;
            int stale = 0;
            @SuppressWarnings("deprecation") // the owned queues are only visible through the impl
            Map<MessageQueue, ProcessQueue> table =
                consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable();
            for (Map.Entry<MessageQueue, ProcessQueue> e : table.entrySet()) {
                if (!topics.contains(e.getKey().getTopic())) {
                    continue;
                }
                owned++;
                long lastPull = e.getValue().getLastPullTimestamp();
                if (since >= 0 && lastPull > since) {
                    pulledSince++;
                }
                if (now - lastPull > STALE_MS) {
                    stale++;
                }
            }
            if (owned != last) {
                event("owned " + owned);
                last = owned;
                since = owned == expected ? now : -1;
                stage = 0;
                continue;
            }
            if (stage == 2) {
                event("check " + owned + " " + stale);
            } else if (since >= 0 && pulledSince == expected) {
                stage++;
                since = now;
                event((stage == 1 ? "pulling " : "ready ") + owned);
            }
        }
    }
}
