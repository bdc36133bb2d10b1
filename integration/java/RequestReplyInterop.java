// The Java client's side of integration/test_request_reply.py, run as a single-file program:
//   respond <namesrv> <topic> <count> <waitSec> : a push consumer of <topic> answers each request with
//       MessageUtil.createReplyMessage(request, "re: " + body) sent by a DefaultMQProducer; prints
//       "REPLIED <correlationId> <body>" per reply and exits after <count> (status 1 if <waitSec> pass first)
//   request <namesrv> <topic> <body> <timeoutMs> : DefaultMQProducer.request, prints
//       "REPLY <replyTopic> <correlationId> <replyBody>"
// Errors are printed as "ERROR <class>: <message>" with exit status 1.
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

public class RequestReplyInterop {
    // The first send of a cold JVM on a busy 2-core CI machine can exceed the client's default 3 s
    // (the timeout covers the route lookup and every attempt): these drivers test behaviour, not latency.
    static final int SEND_TIMEOUT_MS = 30_000;

    public static void main(String[] args) throws Exception {
        int status;
        try {
            status = args[0].equals("respond") ? respond(args) : request(args);
        } catch (Exception e) {
            System.out.println("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
            status = 1;
        }
        System.exit(status);
    }

    private static String text(byte[] body) {
        return new String(body, StandardCharsets.UTF_8);
    }

    private static int respond(String[] args) throws Exception {
        String topic = args[2];
        int count = Integer.parseInt(args[3]);
        long waitSec = Long.parseLong(args[4]);
        DefaultMQProducer producer = new DefaultMQProducer("it-rr-java-responder");
        producer.setSendMsgTimeout(SEND_TIMEOUT_MS);
        producer.setNamesrvAddr(args[1]);
        producer.start();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("it-rr-java-" + topic);
        consumer.setNamesrvAddr(args[1]);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        CountDownLatch replied = new CountDownLatch(count);
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            for (MessageExt request : messages) {
                try {
                    Message reply = MessageUtil.createReplyMessage(request, ("re: " + text(request.getBody()))
                        .getBytes(StandardCharsets.UTF_8));
                    producer.send(reply);
                    System.out.println("REPLIED " + request.getProperty(MessageConst.PROPERTY_CORRELATION_ID)
                        + " " + text(request.getBody()));
                    replied.countDown();
                } catch (Exception e) {
                    System.out.println("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        System.out.println("READY");
        try {
            return replied.await(waitSec, TimeUnit.SECONDS) ? 0 : 1;
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
    }

    private static int request(String[] args) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("it-rr-java-requester");
        producer.setSendMsgTimeout(SEND_TIMEOUT_MS);
        producer.setNamesrvAddr(args[1]);
        producer.start();
        try {
            Message request = new Message(args[2], args[3].getBytes(StandardCharsets.UTF_8));
            Message reply = producer.request(request, Long.parseLong(args[4]));
            System.out.println("REPLY " + reply.getTopic() + " "
                + reply.getProperty(MessageConst.PROPERTY_CORRELATION_ID) + " " + text(reply.getBody()));
            return 0;
        } finally {
            producer.shutdown();
        }
    }
}
