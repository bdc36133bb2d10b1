// A Java client in a namespace, for integration/test_namespace.py (run as a single-file program:
// `java -cp <rocketmq-client classpath> NamespaceClient.java ...`).
//
//   produce <namesrv> <namespace> <topic> <group> <count>
//       sends <count> messages with bodies "java-<i>"; prints "SENT <queue topic> <msgId>" for each.
//   consume <namesrv> <namespace> <topic> <group> <count> <timeoutSeconds>
//       consumes from the first offset until <count> messages came; prints
//       "RECEIVED <topic> <reconsumeTimes> <body>" for each, then "DONE"; exit code 2 on timeout.
//
// The topic and group are given plain: the client wraps them in the namespace itself.

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class NamespaceClient {
    // The first send of a cold JVM on a busy 2-core CI machine can exceed the client's default 3 s
    // (the timeout covers the route lookup and every attempt): these drivers test behaviour, not latency.
    static final int SEND_TIMEOUT_MS = 30_000;

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String namesrv = args[1];
        String namespace = args[2];
        String topic = args[3];
        String group = args[4];
        int count = Integer.parseInt(args[5]);
        if (mode.equals("produce")) {
            produce(namesrv, namespace, topic, group, count);
        } else if (mode.equals("consume")) {
            consume(namesrv, namespace, topic, group, count, Integer.parseInt(args[6]));
        } else {
            System.err.println("unknown mode " + mode);
            System.exit(64);
        }
    }

    private static void produce(String namesrv, String namespace, String topic, String group, int count)
            throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setSendMsgTimeout(SEND_TIMEOUT_MS);
        producer.setNamesrvAddr(namesrv);
        producer.setNamespace(namespace);
        producer.start();
        try {
            for (int i = 0; i < count; i++) {
                Message message = new Message(topic, ("java-" + i).getBytes(StandardCharsets.UTF_8));
                SendResult result = producer.send(message);
                System.out.println("SENT " + result.getMessageQueue().getTopic() + " " + result.getMsgId());
            }
        } finally {
            producer.shutdown();
        }
        System.out.flush();
    }

    private static void consume(
            String namesrv, String namespace, String topic, String group, int count, int timeoutSeconds)
            throws Exception {
        CountDownLatch latch = new CountDownLatch(count);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setNamespace(namespace);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt msg : msgs) {
                synchronized (System.out) {
                    System.out.println("RECEIVED " + msg.getTopic() + " " + msg.getReconsumeTimes() + " "
                        + new String(msg.getBody(), StandardCharsets.UTF_8));
                }
                latch.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        boolean done;
        try {
            done = latch.await(timeoutSeconds, TimeUnit.SECONDS);
        } finally {
            consumer.shutdown();
        }
        System.out.println(done ? "DONE" : "TIMEOUT");
        System.out.flush();
        System.exit(done ? 0 : 2);
    }
}
