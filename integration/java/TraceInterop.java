// The Java client's side of integration/test_trace.py, run as a single-file program, with message
// trace on (the producer's and consumer's `enableMsgTrace` constructor flag):
//   produce <namesrv> <topic> <group> <count> : sends <count> messages with keys, prints "SENT <msgId>" each
//   consume <namesrv> <topic> <group> <count> : consumes until <count> arrived, prints "GOT <msgId>" each
// Shutting down flushes the trace records. Errors: "ERROR <class>: <message>", exit status 1.
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class TraceInterop {
    // The first send of a cold JVM on a busy 2-core CI machine can exceed the client's default 3 s
    // (the timeout covers the route lookup and every attempt): these drivers test behaviour, not latency.
    static final int SEND_TIMEOUT_MS = 30_000;

    public static void main(String[] args) throws Exception {
        String namesrv = args[1], topic = args[2], group = args[3];
        int count = Integer.parseInt(args[4]);
        int status = 0;
        try {
            if (args[0].equals("produce")) {
                DefaultMQProducer producer = new DefaultMQProducer(group, true, null);
                producer.setSendMsgTimeout(SEND_TIMEOUT_MS);
                producer.setNamesrvAddr(namesrv);
                producer.start();
                for (int i = 0; i < count; i++) {
                    Message message = new Message(topic, "TagJ", "java-key-" + i, ("java " + i).getBytes(StandardCharsets.UTF_8));
                    System.out.println("SENT " + producer.send(message).getMsgId());
                }
                producer.shutdown();
            } else {
                CountDownLatch left = new CountDownLatch(count);
                DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group, true, null);
                consumer.setNamesrvAddr(namesrv);
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                consumer.subscribe(topic, "*");
                consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                    for (MessageExt message : messages) {
                        System.out.println("GOT " + message.getMsgId());
                        left.countDown();
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                consumer.start();
                if (!left.await(90, TimeUnit.SECONDS)) {
                    System.out.println("ERROR Timeout: " + left.getCount() + " messages did not arrive");
                    status = 1;
                }
                consumer.shutdown();
            }
        } catch (Exception e) {
            System.out.println("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
            status = 1;
        }
        System.exit(status);
    }
}
