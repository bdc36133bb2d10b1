"""A 5.x controller-mode broker group: the settings of its nodes and what its controller is asked.

Since 5.0 a broker group can switch its master by itself (RocketMQ's RIP-44): a *controller*, a
Raft group, records which replica of each group is the master and which replicas are in sync, and
elects a new master from those when the master dies. Read from the 5.3.3 sources:

- The controller runs inside the NameServer when its config says ``enableControllerInNamesrv=true``
  (``NamesrvStartup`` then starts a ``ControllerManager`` after the NameServer and prints
  :data:`CONTROLLER_BOOT`), or alone (``ControllerStartup``); the release's quick-start config
  embeds it, and so does the kit: one JVM fewer. Its type defaults to DLedger (``controllerType``;
  JRaft is the other choice). Its peers are ``<id>-<host>:<port>`` entries
  (``controllerDLegerPeers``); DLedger's own server listens on this node's port and serves the
  controller's requests there too, so that port, not the NameServer's, is the brokers'
  ``controllerAddr``. The kit runs a group of one peer (``n0``), which elects itself.
- A broker in controller mode (``enableControllerMode=true``) starts with ``brokerId=-1`` and
  fenced (it registers with no NameServer). It asks the controller for an id (1, 2, 3 ... in the
  order the brokers ask; written to its ``storePathBrokerIdentity`` file as
  ``cluster#brokerName#id``), then to be elected; the controller makes the first broker of a group
  that asks its master. The master registers with the NameServer as ``brokerId`` 0, a slave under
  its controller id.
- The master adds a slave that has caught up to the group's *sync state set*; with
  ``allAckInSyncStateSet=true`` a send succeeds once every replica of that set has it. When the
  master's connection to the controller closes (a killed JVM) or its heartbeats stop, the
  controller elects a new master among the live replicas of that set (with
  ``enableElectUncleanMaster=false``, the release's default, never another one: a group whose
  set holds only the dead master stays without one) and tells the brokers
  (``notifyBrokerRoleChanged``); the new master registers as ``brokerId`` 0.

Asked of the controller here: ``CONTROLLER_GET_REPLICA_INFO`` (Java request code 1004, header
``brokerName``): the reply's header carries ``masterBrokerId``, ``masterAddress`` and
``masterEpoch`` (the first two absent while the group has no master), its body the JSON of a
``SyncStateSet`` (``{"syncStateSet":[1,2],"syncStateSetEpoch":3}``). A controller that is not the
Raft leader, or not yet serving as one, answers 2007 (``CONTROLLER_NOT_LEADER``); a leader that
knows no broker of that name answers 2008 (``CONTROLLER_BROKER_METADATA_NOT_EXIST``).
``CONTROLLER_GET_METADATA_INFO`` (1005) names the Raft leader.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath

from rocketmq_py.errors import ClusterError, MalformedBody
from rocketmq_py.testing._cluster import CLUSTER_NAME, _request
from rocketmq_py.testing._settings import broker_config

__all__ = [
    "BROKER_IDENTITY_FILE",
    "CONTROLLER_BOOT",
    "CONTROLLER_JAR_PREFIX",
    "ControllerMetadata",
    "ReplicaInfo",
    "controller_broker_config",
    "controller_metadata",
    "decode_controller_metadata",
    "decode_replica_info",
    "namesrv_controller_config",
    "read_controller_id",
    "replica_info",
]

#: What ``NamesrvStartup`` prints on stdout once the embedded controller runs (after the
#: NameServer's own boot line).
CONTROLLER_BOOT = "The ControllerManager boot success"
#: The jar the controller comes in; the server classpath (``resolve_server``) holds it since 5.0,
#: pulled in by ``rocketmq-namesrv`` with DLedger and JRaft.
CONTROLLER_JAR_PREFIX = "rocketmq-controller-"
#: The file, in a broker's store, where it keeps the id the controller gave it.
BROKER_IDENTITY_FILE = "brokerIdentity"
#: Java ``RequestCode.CONTROLLER_GET_REPLICA_INFO`` and ``CONTROLLER_GET_METADATA_INFO``.
GET_REPLICA_INFO = 1004
GET_METADATA_INFO = 1005
#: Java ``ResponseCode.CONTROLLER_NOT_LEADER`` and ``CONTROLLER_BROKER_METADATA_NOT_EXIST``.
NOT_LEADER = 2007
BROKER_METADATA_NOT_EXIST = 2008
#: The DLedger group and the one peer of the kit's controller.
CONTROLLER_GROUP = "rocketmq-py-controller"
CONTROLLER_PEER = "n0"
# DLedger pre-maps 1 GiB entry files by default (``mappedFileSize``); a test controller writes KiB.
_CONTROLLER_FILE_SIZE = 16 * 1024 * 1024


def namesrv_controller_config(listen_port: int, controller_port: int, store: PurePath) -> dict[str, str]:
    """The ``namesrv.properties`` of a NameServer listening on ``listen_port`` with a DLedger
    controller of one peer embedded, serving on ``controller_port`` and keeping its log in ``store``.

    One file configures both: ``NamesrvStartup`` fills the NameServer's, the controller's and
    JRaft's settings from the same properties. The election settings are the release's defaults,
    written out: only an in-sync replica may become master, and the brokers are told at once.
    """
    return {
        "listenPort": str(listen_port),
        "enableControllerInNamesrv": "true",
        "controllerType": "DLedger",
        "controllerDLegerGroup": CONTROLLER_GROUP,
        "controllerDLegerPeers": f"{CONTROLLER_PEER}-127.0.0.1:{controller_port}",
        "controllerDLegerSelfId": CONTROLLER_PEER,
        "controllerStorePath": str(store),
        "mappedFileSize": str(_CONTROLLER_FILE_SIZE),
        "enableElectUncleanMaster": "false",
        "notifyBrokerRoleChanged": "true",
    }


def controller_broker_config(
    name: str,
    *,
    namesrv: str,
    controller: str,
    port: int,
    store: PurePath,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The broker.conf of one replica of the controller-mode group ``name``, on 127.0.0.1:``port``.

    Every replica gets the same settings but its ports and store: ``brokerId=-1`` and
    ``brokerRole=SLAVE`` (the controller gives the id and the role), the ``controller`` address,
    ``allAckInSyncStateSet`` (a send is acknowledged by every in-sync replica, so none is lost in a
    failover), ``slaveReadEnable`` (a 5.x slave refuses every pull without it), ``brokerIP2`` on
    loopback (the HA address a master registers and its slaves replicate from; Java's default is
    the host's first address), and the identity and epoch files in the store (where Java puts them
    by default), so the kit can read the id.
    ``extra`` comes last and may override any of it.
    """
    conf = broker_config(name, namesrv=namesrv, port=port, store=store, broker_id=-1)
    conf.update(
        {
            "brokerRole": "SLAVE",
            "enableControllerMode": "true",
            "controllerAddr": controller,
            "allAckInSyncStateSet": "true",
            "slaveReadEnable": "true",
            "brokerIP2": "127.0.0.1",
            "storePathBrokerIdentity": str(store / BROKER_IDENTITY_FILE),
            "storePathEpochFile": str(store / "epochFileCheckpoint"),
        }
    )
    conf.update(extra or {})
    return conf


def read_controller_id(store: Path, broker_name: str) -> int | None:
    """The id the controller gave the broker whose store is ``store`` (``None`` before it has one).

    The broker writes ``<cluster>#<brokerName>#<id>`` to its identity file once the controller
    accepted the id; a file of another group or in another form counts as none.
    """
    try:
        text = (store / BROKER_IDENTITY_FILE).read_text().strip()
    except OSError:
        return None
    parts = text.split("#")
    if len(parts) != 3 or parts[:2] != [CLUSTER_NAME, broker_name]:
        return None
    try:
        return int(parts[2])
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """What the controller knows of one broker group (``CONTROLLER_GET_REPLICA_INFO``).

    Attributes:
        master_broker_id: the master's controller id; ``None`` while the group has no master.
        master_address: the master's address; ``None`` while the group has no master.
        master_epoch: how many masters the group has had.
        sync_state_set: the controller ids of the replicas in sync with the master (itself included).
        sync_state_set_epoch: how many times that set changed.
    """

    master_broker_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set: frozenset[int]
    sync_state_set_epoch: int


@dataclass(frozen=True, slots=True)
class ControllerMetadata:
    """Who leads the controller's Raft group (``CONTROLLER_GET_METADATA_INFO``).

    Attributes:
        group: the DLedger group.
        leader_id: the leader's peer id; ``None`` while there is none.
        leader_address: the leader's address; ``None`` while there is none.
        is_leader: whether the controller asked is the leader.
        peers: the group's peers as it lists them (``n0:127.0.0.1:port;``).
    """

    group: str
    leader_id: str | None
    leader_address: str | None
    is_leader: bool
    peers: str


def _optional_int(fields: Mapping[str, str], key: str) -> int | None:
    value = fields.get(key)
    if value is None or value in ("", "null"):
        return None
    try:
        return int(value)
    except ValueError:
        raise ClusterError(f"the controller's {key} is not a number: {value!r}") from None


def decode_replica_info(ext_fields: Mapping[str, str], body: bytes) -> ReplicaInfo:
    """Decode a successful ``CONTROLLER_GET_REPLICA_INFO`` reply: its header and its JSON body.

    Raises:
        ClusterError: a field that is not what Java writes.
    """
    from rocketmq_py.protocol._fastjson import parse_fastjson

    members: frozenset[int] = frozenset()
    set_epoch = 0
    if body:
        try:
            data = parse_fastjson(body)
        except MalformedBody as exc:
            raise ClusterError(f"the controller's sync state set does not parse: {exc}") from None
        if not isinstance(data, dict):
            raise ClusterError(f"the controller's sync state set is not an object: {body[:200]!r}")
        ids = data.get("syncStateSet") or []
        epoch = data.get("syncStateSetEpoch", 0)
        if not isinstance(ids, list) or not all(type(i) is int for i in ids) or type(epoch) is not int:
            raise ClusterError(f"the controller's sync state set is not ids and an epoch: {body[:200]!r}")
        members, set_epoch = frozenset(ids), epoch
    address = ext_fields.get("masterAddress") or None
    return ReplicaInfo(
        master_broker_id=_optional_int(ext_fields, "masterBrokerId"),
        master_address=address,
        master_epoch=_optional_int(ext_fields, "masterEpoch") or 0,
        sync_state_set=members,
        sync_state_set_epoch=set_epoch,
    )


def decode_controller_metadata(ext_fields: Mapping[str, str]) -> ControllerMetadata:
    """Decode the header of a ``CONTROLLER_GET_METADATA_INFO`` reply."""
    return ControllerMetadata(
        group=ext_fields.get("group", ""),
        leader_id=ext_fields.get("controllerLeaderId") or None,
        leader_address=ext_fields.get("controllerLeaderAddress") or None,
        is_leader=ext_fields.get("isLeader") == "true",
        peers=ext_fields.get("peers", ""),
    )


def replica_info(controller: str, broker_name: str, timeout: float = 3.0) -> ReplicaInfo | None:
    """Ask the controller at ``controller`` about the group ``broker_name``.

    Returns ``None`` while it cannot tell: it is not (yet) serving as the Raft leader, or no broker
    of that group has registered with it.

    Raises:
        OSError: the controller is unreachable.
        ClusterError: it answered another error, or a reply that does not decode.
    """
    reply = _request(controller, GET_REPLICA_INFO, {"brokerName": broker_name}, timeout, b"", None, None)
    if reply.code in (NOT_LEADER, BROKER_METADATA_NOT_EXIST):
        return None
    if reply.code != 0:
        raise ClusterError(
            f"the controller {controller} answered code {reply.code} about {broker_name}: {reply.remark or ''}"
        )
    return decode_replica_info(reply.ext_fields, bytes(reply.body))


def controller_metadata(controller: str, timeout: float = 3.0) -> ControllerMetadata:
    """Ask the controller at ``controller`` who leads its Raft group.

    Raises:
        OSError: the controller is unreachable.
        ClusterError: it answered an error.
    """
    reply = _request(controller, GET_METADATA_INFO, None, timeout, b"", None, None)
    if reply.code != 0:
        raise ClusterError(f"the controller {controller} answered code {reply.code}: {reply.remark or ''}")
    return decode_controller_metadata(reply.ext_fields)
