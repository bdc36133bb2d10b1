/*
 * BatchAckBody: golden BATCH_ACK_MESSAGE bodies, written by the Java client's own
 * BatchAckMessageRequestBody.encode().
 *
 * Part of rocketmq-py (our own code, not taken from Apache RocketMQ). It only *uses* the public
 * rocketmq-remoting classes: for a few fixed sets of acknowledged messages it builds the body as
 * MQClientAPIImpl.batchAckMessageAsync would (one BatchAck per checkpoint, a bit per offset) and
 * writes the inputs and Java's bytes to a JSON file that tests/protocol/test_batch_ack.py checks
 * rocketmq_py.protocol.encode_batch_ack_body against.
 *
 * Run (Java 17 single-file source launcher, classpath = rocketmq-client and its dependencies):
 *
 *     java -cp "<client-lib>/*" protocol/recorder/BatchAckBody.java protocol/vectors/batch_ack_body.json
 *
 * (from Python: rocketmq_py.testing._tools.run_java_program(path, [out]) puts that classpath together).
 */

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.protocol.body.BatchAck;
import org.apache.rocketmq.remoting.protocol.body.BatchAckMessageRequestBody;

public class BatchAckBody {
    // group, topic, retry, startOffset, queueId, reviveQueueId, popTime, invisibleTime, then offsets
    private static final long[][] OFFSETS = {
        {100, 101, 103, 109, 131},
        {7},
        {0, 1, 2, 3, 4, 5, 6, 7, 8},
        {4096, 4100, 4127},
    };
    private static final String[][] NAMES = {
        {"g1", "t1", "0"},
        {"g1", "t1", "2"},
        {"ns1%group", "ns1%orders", "1"},
        {"CID_é", "topic-with-dash", "0"},
    };
    private static final long[][] NUMBERS = {  // startOffset, queueId, reviveQueueId, popTime, invisibleTime
        {100, 1, 2, 1700000000000L, 60000},
        {7, 0, 5, 1700000001234L, 10000},
        {0, 3, 7, 1764000000000L, 5000},
        {4096, 15, 0, 1764000000999L, 300000},
    };

    private static BatchAck ack(int i) {
        BatchAck ack = new BatchAck();
        ack.setConsumerGroup(NAMES[i][0]);
        ack.setTopic(NAMES[i][1]);
        ack.setRetry(NAMES[i][2]);
        ack.setStartOffset(NUMBERS[i][0]);
        ack.setQueueId((int) NUMBERS[i][1]);
        ack.setReviveQueueId((int) NUMBERS[i][2]);
        ack.setPopTime(NUMBERS[i][3]);
        ack.setInvisibleTime(NUMBERS[i][4]);
        BitSet bits = new BitSet();
        for (long offset : OFFSETS[i]) {
            bits.set((int) (offset - NUMBERS[i][0]));
        }
        ack.setBitSet(bits);
        return ack;
    }

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String longs(long[] values) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < values.length; i++) {
            out.append(i == 0 ? "" : ", ").append(values[i]);
        }
        return out.append("]").toString();
    }

    private static String entry(int i) {
        return "{\"consumer_group\": " + quote(NAMES[i][0]) + ", \"topic\": " + quote(NAMES[i][1])
            + ", \"retry\": " + quote(NAMES[i][2]) + ", \"start_offset\": " + NUMBERS[i][0]
            + ", \"queue_id\": " + NUMBERS[i][1] + ", \"revive_queue_id\": " + NUMBERS[i][2]
            + ", \"pop_time\": " + NUMBERS[i][3] + ", \"invisible_time\": " + NUMBERS[i][4]
            + ", \"offsets\": " + longs(OFFSETS[i]) + "}";
    }

    public static void main(String[] args) throws IOException {
        int[][] cases = {{0}, {0, 1}, {2}, {3}};
        StringBuilder out = new StringBuilder("{\n  \"produced_by\": ")
            .append(quote("rocketmq-client " + MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION)
                + " BatchAckMessageRequestBody.encode()"))
            .append(",\n  \"cases\": [\n");
        for (int c = 0; c < cases.length; c++) {
            List<BatchAck> acks = new ArrayList<>();
            StringBuilder inputs = new StringBuilder("[");
            for (int k = 0; k < cases[c].length; k++) {
                acks.add(ack(cases[c][k]));
                inputs.append(k == 0 ? "" : ", ").append(entry(cases[c][k]));
            }
            BatchAckMessageRequestBody body = new BatchAckMessageRequestBody();
            body.setBrokerName(c == 3 ? "broker-b" : "broker-a");
            body.setAcks(acks);
            String encoded = new String(body.encode(), StandardCharsets.UTF_8);
            out.append("    {\"broker_name\": ").append(quote(body.getBrokerName()))
                .append(", \"acks\": ").append(inputs).append("], \"body\": ").append(quote(encoded))
                .append("}").append(c + 1 < cases.length ? ",\n" : "\n");
        }
        out.append("  ]\n}\n");
        Files.writeString(Path.of(args[0]), out.toString(), StandardCharsets.UTF_8);
    }
}
