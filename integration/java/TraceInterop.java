// The Java client's side of integration/test_trace.py, run as a single-file program, with message
// trace on (the producer's and consumer's `enableMsgTrace` constructor flag):
//   produce <namesrv> <topic> <group> <count> : sends <count> messages with keys, prints "SENT <msgId>" each
//   consume <namesrv> <topic> <group> <count> : consumes until <count> arrived, prints "GOT <msgId>" each
// Before shutting down, each waits until every message's trace record (Pub, or its group's
// SubAfter) is stored and indexed: Java's trace dispatcher sends records in the background, and its
// shutdown gives up on one still in flight (5.x waits 5 s for its executor, 4.9.x not at all:
// AsyncTraceDispatcher.shutdown), which a cold JVM on a busy machine can miss.
// Errors: "ERROR <class>: <message>", exit status 1.
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.MQAdmin;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.trace.TraceDispatcher;
import org.apache.rocketmq.client.trace.TraceType;
import org.apache.rocketmq.client.trace.TraceView;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class TraceInterop {
    // The first send of a cold JVM on a busy 2-core CI machine can exceed the client's default 3 s
    // (the timeout covers the route lookup and every attempt): these drivers test behaviour, not latency.
    static final int SEND_TIMEOUT_MS = 30_000;
    static final String TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC";
    static final long TRACE_WAIT_MS = 90_000;

    // 0 when every id's record came, else 1 (and an ERROR line).
    static int awaitTraces(MQAdmin client, TraceDispatcher dispatcher, List<String> ids, TraceType type, String group)
        throws Exception {
        for (String id : new ArrayList<>(ids)) {
            if (!awaitTrace(client, dispatcher, id, type, group)) {
                System.out.println("ERROR Timeout: no " + type + " trace record of " + id + " by " + group);
                return 1;
            }
        }
        return 0;
    }

    // Flush the dispatcher, then query the trace topic by the message id (as queryMsgTraceById does)
    // until a record of `type` by `group` is there. False when none came within TRACE_WAIT_MS.
    static boolean awaitTrace(MQAdmin client, TraceDispatcher dispatcher, String msgId, TraceType type, String group)
        throws Exception {
        dispatcher.flush();
        long deadline = System.currentTimeMillis() + TRACE_WAIT_MS;
        while (System.currentTimeMillis() < deadline) {
            List<MessageExt> records = new ArrayList<>();
            try {
                records = client.queryMessage(TRACE_TOPIC, msgId, 64, 0, Long.MAX_VALUE).getMessageList();
            } catch (MQClientException e) {
                // "query message by key finished, but no message": not stored or not indexed yet
            }
            for (MessageExt record : records) {
                for (TraceView view : TraceView.decodeFromTraceTransData(msgId, record)) {
                    if (view.getMsgType().equals(type.name()) && view.getGroupName().equals(group)) {
                        return true;
                    }
                }
            }
            Thread.sleep(200);
        }
        return false;
    }

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
                List<String> sent = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    Message message = new Message(topic, "TagJ", "java-key-" + i, ("java " + i).getBytes(StandardCharsets.UTF_8));
                    sent.add(producer.send(message).getMsgId());
                    System.out.println("SENT " + sent.get(i));
                }
                status = awaitTraces(producer, producer.getTraceDispatcher(), sent, TraceType.Pub, group);
                producer.shutdown();
            } else {
                CountDownLatch left = new CountDownLatch(count);
                List<String> got = java.util.Collections.synchronizedList(new ArrayList<>());
                DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group, true, null);
                consumer.setNamesrvAddr(namesrv);
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                consumer.subscribe(topic, "*");
                consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                    for (MessageExt message : messages) {
                        System.out.println("GOT " + message.getMsgId());
                        got.add(message.getMsgId());
                        left.countDown();
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                consumer.start();
                if (!left.await(90, TimeUnit.SECONDS)) {
                    System.out.println("ERROR Timeout: " + left.getCount() + " messages did not arrive");
                    status = 1;
                } else {
                    status = awaitTraces(consumer, consumer.getTraceDispatcher(), got, TraceType.SubAfter, group);
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
