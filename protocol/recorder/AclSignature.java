/*
 * AclSignature: computes golden ACL signatures with the Java client's own AclClientRPCHook.
 *
 * Part of rocketmq-py (our own code, not taken from Apache RocketMQ). It only *uses* the public
 * rocketmq-client API: it builds a few requests with fixed contents, runs
 * org.apache.rocketmq.acl.common.AclClientRPCHook#doBeforeRequest on each, and writes the
 * inputs and the resulting extFields to a JSON file that tests/transport/test_acl_vector.py
 * checks our AclRPCHook against.
 *
 * Run (Java 17 single-file source launcher, classpath = rocketmq-client and its dependencies):
 *
 *     java -cp "<client-lib>/*" protocol/recorder/AclSignature.java protocol/vectors/acl_signature.json
 *
 * or simply `python -m rocketmq_py.testing record-vectors --out protocol/vectors`, which runs it.
 */

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.SendMessageRequestHeaderV2;

public class AclSignature {

    static final String ACCESS_KEY = "rocketmq2";
    static final String SECRET_KEY = "12345678";

    /** One signed request: its name, the command before signing, and the credentials used. */
    record Case(String name, String description, RemotingCommand command, String securityToken) {}

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: AclSignature OUTPUT.json");
            System.exit(2);
        }
        List<Case> cases = new ArrayList<>();

        // 1. A SEND_MESSAGE_V2 request as DefaultMQProducer builds it, with non-ASCII
        //    properties (tags, keys, a user property) and a non-ASCII body.
        SendMessageRequestHeaderV2 send = new SendMessageRequestHeaderV2();
        send.setA("acl-producer-group");
        send.setB("AclTopic");
        send.setC("TBW102");
        send.setD(4);
        send.setE(1);
        send.setF(0);
        send.setG(1700000000123L);
        send.setH(0);
        send.setI("KEYS\u0001鍵 key-1\u0002TAGS\u0001タグA\u0002名前\u0001値 ü\u0002WAIT\u0001true\u0002");
        send.setJ(0);
        send.setK(false);
        send.setM(false);
        send.setBrokerName("broker-a");
        RemotingCommand sendCmd = RemotingCommand.createRequestCommand(RequestCode.SEND_MESSAGE_V2, send);
        sendCmd.setBody("hello, 世界 ✓".getBytes(StandardCharsets.UTF_8));
        cases.add(new Case("send-message-v2", "SEND_MESSAGE_V2 header with non-ASCII properties, UTF-8 body", sendCmd, null));

        // 2. A PULL_MESSAGE request with no body, signed with a security token (STS).
        PullMessageRequestHeader pull = new PullMessageRequestHeader();
        pull.setConsumerGroup("acl-consumer-group");
        pull.setTopic("AclTopic");
        pull.setQueueId(3);
        pull.setQueueOffset(42L);
        pull.setMaxMsgNums(32);
        pull.setSysFlag(2);
        pull.setCommitOffset(40L);
        pull.setSuspendTimeoutMillis(15000L);
        pull.setSubVersion(1700000000456L);
        pull.setExpressionType("TAG");
        pull.setBrokerName("broker-a");
        RemotingCommand pullCmd = RemotingCommand.createRequestCommand(RequestCode.PULL_MESSAGE, pull);
        cases.add(new Case("pull-message-token", "PULL_MESSAGE header, no body, SecurityToken set", pullCmd, "sts-token-Ω"));

        // 3. Keys whose order differs between UTF-16 code units (Java's TreeMap) and Unicode
        //    code points: U+FF21 sorts after the surrogate pair of U+1D49C in Java, before it in
        //    a naive code-point sort.
        RemotingCommand orderCmd = RemotingCommand.createRequestCommand(RequestCode.HEART_BEAT, null);
        orderCmd.addExtField("\uFF21", "fullwidth-A");
        orderCmd.addExtField("\uD835\uDC9C", "script-A");
        orderCmd.addExtField("z", "last-ascii");
        orderCmd.addExtField("Zebra", "upper-before-lower");
        orderCmd.setBody(new byte[] {0, 1, 2, (byte) 0xff});
        cases.add(new Case("utf16-key-order", "keys that sort differently by UTF-16 unit and by code point; binary body", orderCmd, null));

        StringBuilder out = new StringBuilder();
        out.append("{\n");
        out.append("  \"produced_by\": ").append(str("rocketmq-client " + MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION)
            .replace("V", "").replace('_', '.') + " org.apache.rocketmq.acl.common.AclClientRPCHook")).append(",\n");
        out.append("  \"algorithm\": ").append(str("Base64(HmacSHA1(secretKey, concat(values of extFields sorted by key, Signature excluded) + body))")).append(",\n");
        out.append("  \"cases\": [\n");
        for (int i = 0; i < cases.size(); i++) {
            Case c = cases.get(i);
            RemotingCommand cmd = c.command();
            cmd.makeCustomHeaderToNet();  // what the command carries on the wire, before the hook
            Map<String, String> before = new TreeMap<>(cmd.getExtFields() == null ? Map.of() : cmd.getExtFields());
            SessionCredentials credentials = c.securityToken() == null
                ? new SessionCredentials(ACCESS_KEY, SECRET_KEY)
                : new SessionCredentials(ACCESS_KEY, SECRET_KEY, c.securityToken());
            new AclClientRPCHook(credentials).doBeforeRequest("127.0.0.1:10911", cmd);
            Map<String, String> after = new TreeMap<>(cmd.getExtFields());
            byte[] body = cmd.getBody() == null ? new byte[0] : cmd.getBody();
            out.append("    {\n");
            out.append("      \"name\": ").append(str(c.name())).append(",\n");
            out.append("      \"description\": ").append(str(c.description())).append(",\n");
            out.append("      \"code\": ").append(cmd.getCode()).append(",\n");
            out.append("      \"access_key\": ").append(str(ACCESS_KEY)).append(",\n");
            out.append("      \"secret_key\": ").append(str(SECRET_KEY)).append(",\n");
            out.append("      \"security_token\": ").append(c.securityToken() == null ? "null" : str(c.securityToken())).append(",\n");
            out.append("      \"body_base64\": ").append(str(Base64.getEncoder().encodeToString(body))).append(",\n");
            out.append("      \"ext_fields_before\": ").append(obj(before)).append(",\n");
            out.append("      \"ext_fields_after\": ").append(obj(after)).append(",\n");
            out.append("      \"signature\": ").append(str(after.get(SessionCredentials.SIGNATURE))).append("\n");
            out.append(i + 1 < cases.size() ? "    },\n" : "    }\n");
        }
        out.append("  ]\n}\n");
        Files.writeString(Path.of(args[0]), out.toString(), StandardCharsets.UTF_8);
    }

    /** A JSON object with the entries in the map's order. */
    static String obj(Map<String, String> map) {
        StringBuilder sb = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, String> e : map.entrySet()) {
            sb.append(first ? "" : ", ").append(str(e.getKey())).append(": ").append(str(e.getValue()));
            first = false;
        }
        return sb.append('}').toString();
    }

    /** A JSON string literal; control characters escaped, everything else as UTF-8 text. */
    static String str(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == '"' || ch == '\\') {
                sb.append('\\').append(ch);
            } else if (ch < 0x20) {
                sb.append(String.format("\\u%04x", (int) ch));
            } else {
                sb.append(ch);
            }
        }
        return sb.append('"').toString();
    }
}
