// The Java client's side of integration/test_recall.py, run as a single-file program:
//   send   <namesrv> <topic> <delaySec> : sends one message with setDelayTimeSec, prints "SENT <msgId> <recallHandle>"
//   recall <namesrv> <topic> <handle>   : recallMessage, prints "RECALLED <msgId>"
//   recall-each <namesrv> <topic>       : once started prints "READY", then recalls each handle read from
//                                         stdin (one a line) and prints "RECALLED <msgId>" for it, until EOF;
//                                         so the JVM's start does not eat into a delivery time
// Errors are printed as "ERROR <class>: <message>" with exit status 1.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

public class RecallInterop {
    // The first send of a cold JVM on a busy 2-core CI machine can exceed the client's default 3 s
    // (the timeout covers the route lookup and every attempt): these drivers test behaviour, not latency.
    static final int SEND_TIMEOUT_MS = 30_000;

    public static void main(String[] args) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("it-recall-java");
        producer.setSendMsgTimeout(SEND_TIMEOUT_MS);
        producer.setNamesrvAddr(args[1]);
        producer.start();
        int status = 0;
        try {
            if (args[0].equals("send")) {
                Message message = new Message(args[2], "from-java".getBytes(StandardCharsets.UTF_8));
                message.setDelayTimeSec(Long.parseLong(args[3]));
                SendResult result = producer.send(message);
                System.out.println("SENT " + result.getMsgId() + " " + result.getRecallHandle());
            } else if (args[0].equals("recall-each")) {
                System.out.println("READY");
                System.out.flush();
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                for (String handle = in.readLine(); handle != null; handle = in.readLine()) {
                    System.out.println("RECALLED " + producer.recallMessage(args[2], handle.trim()));
                    System.out.flush();
                }
            } else {
                System.out.println("RECALLED " + producer.recallMessage(args[2], args[3]));
            }
        } catch (Exception e) {
            System.out.println("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
            status = 1;
        } finally {
            producer.shutdown();
        }
        System.exit(status);
    }
}
