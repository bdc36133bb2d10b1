// The Java client's POP consumer for integration/test_pop.py, run as a single-file program:
//   <namesrv> <group> <topic> <outFile> <stopFile> [<expect>]
// A DefaultMQPushConsumer with setClientRebalance(false) (the group is in POP mode on the brokers).
// Each consumed message is appended to outFile as "CONSUMED <body> <reconsumeTimes>" (flushed per
// line, so the test can poll it); it prints READY once started and shuts down once stopFile exists
// (at most 10 minutes). With <expect> (benchmarks/consumer.py's javapop side), it also prints FIRST
// at the first message and "DONE <distinct> <deliveries>" once <expect> distinct messages came.
// Errors are printed as "ERROR <class>: <message>" with exit status 1.
import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

public class PopConsumer {
    public static void main(String[] args) throws Exception {
        Path stop = Path.of(args[4]);
        long expect = args.length > 5 ? Long.parseLong(args[5]) : -1;
        Set<String> seen = new HashSet<>();
        long[] deliveries = {0};
        int status = 0;
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[1]);
        try (PrintWriter out = new PrintWriter(new FileWriter(args[3], StandardCharsets.UTF_8, true))) {
            consumer.setNamesrvAddr(args[0]);
            consumer.setClientRebalance(false);
            consumer.setPopInvisibleTime(10_000);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(args[2], "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                synchronized (out) {
                    for (MessageExt message : messages) {
                        if (expect < 0) {
                            out.println("CONSUMED " + new String(message.getBody(), StandardCharsets.UTF_8)
                                + " " + message.getReconsumeTimes());
                        } else if (deliveries[0]++ == 0) {
                            System.out.println("FIRST");
                        }
                        if (seen.add(message.getMsgId()) && seen.size() == expect) {
                            System.out.println("DONE " + seen.size() + " " + deliveries[0]);
                        }
                    }
                    out.flush();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            System.out.println("READY");
            long deadline = System.currentTimeMillis() + 600_000;
            while (!Files.exists(stop) && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
        } catch (Exception e) {
            System.out.println("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage());
            status = 1;
        } finally {
            consumer.shutdown();
        }
        System.exit(status);
    }
}
