/*
 * RecordVectors: the Java side of rocketmq-py's golden-vector session.
 *
 * Part of rocketmq-py (our own code, not taken from Apache RocketMQ). It drives the official Java
 * client (rocketmq-client, public API only) through a scripted conversation while our recording
 * proxy (rocketmq_py/testing/_recorder.py) sits between it and the NameServer and broker. Every
 * frame the proxy sees becomes a candidate vector; rocketmq_py/testing/_record_vectors.py picks
 * the ones kept in protocol/vectors/.
 *
 * Usage (Java 17 single-file source launcher; classpath = rocketmq-client and its dependencies):
 *
 *     java -cp "<client-lib>/*" RecordVectors.java MODE NAMESRV TOPIC
 *
 * MODE is one of:
 *   produce   DefaultMQProducer: route query, three sends to queue 0 (a small message, a body
 *             over 4 KiB that the client compresses, a message with non-ASCII tags, keys and user
 *             properties) and one batch of three to queue 1.
 *   single    DefaultMQProducer: one message with non-ASCII properties to queue 1 (run with
 *             -Drocketmq.serialize.type=ROCKETMQ for binary headers).
 *   consume   two DefaultMQPushConsumers (concurrent listener) in one group: the first consumes
 *             everything (pull, offsets, consumer list, heartbeat), then the second joins so the
 *             broker sends NOTIFY_CONSUMER_IDS_CHANGED; also one synchronous offset update.
 *   orderly   a DefaultMQPushConsumer with MessageListenerOrderly (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ).
 *
 * Each message sent is reported on stdout as one line
 *   SENT name=<n> queue=<q> offset=<o> length=<bytes> sha256=<hex> msgId=<id>
 * and each consumer reports CONSUMED lines, so the Python side can describe the vectors.
 *
 * Everything is named deterministically (groups, instance names, client IP 127.0.0.1, bodies) so
 * that a re-recording differs from the last one only in timestamps, ids and offsets.
 */

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class RecordVectors {

    static final String PRODUCER_GROUP = "vectors-producer";
    static final String CONSUMER_GROUP = "vectors-consumer";
    static final String ORDERLY_GROUP = "vectors-orderly";
    /** Messages the produce mode stores: three in queue 0, a batch of three in queue 1. */
    static final int PRODUCED = 6;

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: RecordVectors produce|single|consume|orderly NAMESRV TOPIC");
            System.exit(2);
        }
        String mode = args[0];
        String namesrv = args[1];
        String topic = args[2];
        switch (mode) {
            case "produce" -> produce(namesrv, topic);
            case "single" -> single(namesrv, topic);
            case "consume" -> consume(namesrv, topic);
            case "orderly" -> orderly(namesrv, topic);
            default -> {
                System.err.println("unknown mode " + mode);
                System.exit(2);
            }
        }
        System.out.println("DONE " + mode);
        System.exit(0);  // client threads are not all daemons
    }

    /** The body that the client compresses: a little over 6 KiB of text, identical every run. */
    static byte[] largeBody() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 100; i++) {
            sb.append(String.format("golden vector line %03d: the quick brown fox jumps over the lazy dog%n", i));
        }
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    static DefaultMQProducer startProducer(String namesrv, String group, String instance) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName(instance);
        producer.setClientIP("127.0.0.1");
        producer.setVipChannelEnabled(false);  // the VIP port (listenPort - 2) is not proxied
        producer.setSendMsgTimeout(15000);
        producer.start();
        return producer;
    }

    static List<MessageQueue> queues(DefaultMQProducer producer, String topic) throws Exception {
        List<MessageQueue> queues = new ArrayList<>(producer.fetchPublishMessageQueues(topic));
        queues.sort(Comparator.comparingInt(MessageQueue::getQueueId));
        return queues;
    }

    static void report(String name, Message message, SendResult result) throws Exception {
        report(name, message, result, 0);
    }

    /** One SENT line; {@code index} is the message's position in a batch (0 for a single send). */
    static void report(String name, Message message, SendResult result, int index) throws Exception {
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException(name + ": " + result);
        }
        byte[] body = message.getBody();
        String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
        String msgId = result.getMsgId().split(",")[index];  // a batch reports its ids comma-joined
        System.out.printf("SENT name=%s queue=%d offset=%d length=%d sha256=%s msgId=%s%n", name,
            result.getMessageQueue().getQueueId(), result.getQueueOffset() + index, body.length, sha, msgId);
    }

    static Message unicodeMessage(String topic, String body) {
        Message message = new Message(topic, "タグC", "鍵-3 key-3", body.getBytes(StandardCharsets.UTF_8));
        message.putUserProperty("名前", "値 ü");
        message.putUserProperty("emoji", "🚀 rocket");
        return message;
    }

    static void produce(String namesrv, String topic) throws Exception {
        DefaultMQProducer producer = startProducer(namesrv, PRODUCER_GROUP, "vectors-producer");
        try {
            List<MessageQueue> queues = queues(producer, topic);
            MessageQueue q0 = queues.get(0);
            MessageQueue q1 = queues.get(1);

            Message small = new Message(topic, "TagA", "key-1", "hello, golden vectors".getBytes(StandardCharsets.UTF_8));
            report("small", small, producer.send(small, q0));

            Message large = new Message(topic, "TagB", "key-2", largeBody());
            report("compressed", large, producer.send(large, q0));

            Message unicode = unicodeMessage(topic, "本文 — ünïcödé body");
            report("unicode", unicode, producer.send(unicode, q0));

            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                Message m = new Message(topic, "TagD", "batch-" + i, ("batch message " + i).getBytes(StandardCharsets.UTF_8));
                batch.add(m);
            }
            SendResult result = producer.send(batch, q1);
            for (int i = 0; i < batch.size(); i++) {
                report("batch-" + i, batch.get(i), result, i);
            }
        } finally {
            producer.shutdown();
        }
    }

    static void single(String namesrv, String topic) throws Exception {
        DefaultMQProducer producer = startProducer(namesrv, PRODUCER_GROUP + "-binary", "vectors-producer-binary");
        try {
            MessageQueue q1 = queues(producer, topic).get(1);
            Message unicode = unicodeMessage(topic, "binary header — ünïcödé");
            report("binary", unicode, producer.send(unicode, q1));
        } finally {
            producer.shutdown();
        }
    }

    static DefaultMQPushConsumer pushConsumer(String namesrv, String group, String instance, String topic)
        throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName(instance);
        consumer.setClientIP("127.0.0.1");
        consumer.setVipChannelEnabled(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.subscribe(topic, "*");
        return consumer;
    }

    static void waitFor(AtomicInteger counter, int target, long timeoutMillis, String what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMillis;
        while (counter.get() < target) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(what + ": " + counter.get() + " of " + target + " after " + timeoutMillis + " ms");
            }
            Thread.sleep(100);
        }
    }

    static void printConsumed(String who, MessageExt m) {
        System.out.printf("CONSUMED by=%s queue=%d offset=%d sysFlag=%d length=%d%n", who, m.getQueueId(),
            m.getQueueOffset(), m.getSysFlag(), m.getBody().length);
    }

    static void consume(String namesrv, String topic) throws Exception {
        AtomicInteger consumed = new AtomicInteger();
        DefaultMQPushConsumer first = pushConsumer(namesrv, CONSUMER_GROUP, "vectors-consumer-1", topic);
        first.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            messages.forEach(m -> printConsumed("consumer-1", m));
            consumed.addAndGet(messages.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        first.start();
        DefaultMQPushConsumer second = null;
        try {
            waitFor(consumed, PRODUCED, 60000, "consumer-1");
            Thread.sleep(2500);  // let the periodic (oneway) offset persist run

            // One synchronous UPDATE_CONSUMER_OFFSET, through the client's own offset store.
            MessageQueue q0 = new MessageQueue(topic, firstBroker(first, topic), 0);
            first.getDefaultMQPushConsumerImpl().getOffsetStore().updateConsumeOffsetToBroker(q0, 3, false);
            System.out.println("UPDATED offset queue=0 offset=3 sync");

            // A second member: the broker tells every member of the group (NOTIFY_CONSUMER_IDS_CHANGED).
            second = pushConsumer(namesrv, CONSUMER_GROUP, "vectors-consumer-2", topic);
            second.registerMessageListener((MessageListenerConcurrently) (messages, context) ->
                ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
            second.start();
            Thread.sleep(4000);  // rebalance on both members
        } finally {
            if (second != null) {
                second.shutdown();
            }
            first.shutdown();
        }
    }

    static String firstBroker(DefaultMQPushConsumer consumer, String topic) throws Exception {
        return consumer.fetchSubscribeMessageQueues(topic).stream()
            .map(MessageQueue::getBrokerName).sorted().findFirst().orElseThrow();
    }

    static void orderly(String namesrv, String topic) throws Exception {
        AtomicInteger consumed = new AtomicInteger();
        DefaultMQPushConsumer consumer = pushConsumer(namesrv, ORDERLY_GROUP, "vectors-orderly", topic);
        consumer.registerMessageListener((MessageListenerOrderly) (messages, context) -> {
            messages.forEach(m -> printConsumed("orderly", m));
            consumed.addAndGet(messages.size());
            return ConsumeOrderlyStatus.SUCCESS;
        });
        consumer.start();
        try {
            waitFor(consumed, PRODUCED, 60000, "orderly");
            Thread.sleep(2500);  // the periodic lockAll (first after 1 s) locks every queue in one batch
        } finally {
            consumer.shutdown();
        }
    }
}
