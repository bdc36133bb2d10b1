"""Network faults for local test clusters: make a broker unreachable without stopping it.

A broker of a :class:`~rocketmq_py.testing.LocalCluster` listens on 127.0.0.1. :func:`block_ports`
adds iptables rules that drop, on the loopback interface's INPUT path, every TCP segment to or from
the broker's client ports (``listenPort`` and the VIP channel ``listenPort - 2``): a new connect
times out (its SYN is lost), an open connection goes silent both ways, as when a network path dies.

- INPUT, not OUTPUT: a locally generated packet dropped on OUTPUT fails the sender's system call at
  once (EPERM), which no real black hole does.
- The broker's own connection to the NameServer uses other ports and keeps working, so the broker
  stays registered and in every route: clients keep being told to use it (the idle-pull-drop case of
  issue 11), unlike a killed broker that the NameServer drops.

Each rule carries the comment ``rocketmq-py:<tag>``; :meth:`PortBlock.remove` deletes exactly the
rules it added, and blocks still in place when the process exits are removed then. Needs root (or
CAP_NET_ADMIN) and the ``iptables`` command; anything else raises :class:`ClusterError`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import Final

from rocketmq_py.errors import ClusterError

__all__ = ["COMMENT_PREFIX", "PortBlock", "block_ports", "rule_specs", "unblock"]

#: Every rule we add is tagged ``rocketmq-py:<tag>`` (visible in ``iptables -S INPUT``).
COMMENT_PREFIX: Final = "rocketmq-py:"
_CHAIN: Final = "INPUT"
_INTERFACE: Final = "lo"
_TIMEOUT: Final = 30.0  # seconds for one iptables command (``-w`` waits for the xtables lock)

# The blocks in place, by tag (removed at exit).
_active: dict[str, PortBlock] = {}


def rule_specs(ports: Sequence[int], tag: str) -> list[list[str]]:
    """The iptables rule specifications (after the chain name) that black-hole ``ports`` on loopback.

    Two rules a port: segments to it (clients' requests and connects) and from it (its answers).

    Args:
        ports: TCP ports on 127.0.0.1.
        tag: names the block in the rules' comment.

    Returns:
        One argument list per rule, e.g. ``["-i", "lo", "-p", "tcp", "--dport", "10911", ...]``.
    """
    specs = []
    for port in ports:
        for direction in ("--dport", "--sport"):
            specs.append(
                [
                    "-i",
                    _INTERFACE,
                    "-p",
                    "tcp",
                    direction,
                    str(port),
                    "-m",
                    "comment",
                    "--comment",
                    f"{COMMENT_PREFIX}{tag}",
                    "-j",
                    "DROP",
                ]
            )
    return specs


def _iptables(*args: str) -> None:
    try:
        done = subprocess.run(
            ["iptables", "-w", *args], capture_output=True, text=True, timeout=_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(f"iptables {' '.join(args)} failed: {exc}") from exc
    if done.returncode != 0:
        raise ClusterError(f"iptables {' '.join(args)} exited with {done.returncode}: {done.stderr.strip()}")


class PortBlock:
    """Loopback ports made unreachable by :func:`block_ports`; :meth:`remove` lifts the block.

    Args:
        ports: the blocked TCP ports.
        tag: the name in the rules' comment.
    """

    def __init__(self, ports: Sequence[int], tag: str) -> None:
        self.ports = tuple(ports)
        self.tag = tag
        self._added: list[list[str]] = []

    def __repr__(self) -> str:
        state = "active" if self._added else "lifted"
        return f"<PortBlock {self.tag} ports {', '.join(map(str, self.ports))} {state}>"

    @property
    def active(self) -> bool:
        """Whether any of its rules is in place."""
        return bool(self._added)

    def apply(self) -> None:
        """Add the rules (first in the chain, so no earlier ACCEPT lets segments through).

        Raises:
            ClusterError: not root, no ``iptables``, or a rule could not be added (the rules added
                so far are removed again).
        """
        if os.geteuid() != 0:
            raise ClusterError("blocking a broker needs root (iptables rules on the loopback interface)")
        if shutil.which("iptables") is None:
            raise ClusterError("blocking a broker needs the iptables command (apt-get install iptables)")
        try:
            for spec in rule_specs(self.ports, self.tag):
                _iptables("-I", _CHAIN, *spec)
                self._added.append(spec)
        except ClusterError:
            self.remove()
            raise
        _active[self.tag] = self

    def remove(self) -> None:
        """Delete the rules this block added (idempotent).

        Raises:
            ClusterError: a rule could not be deleted (the others are still tried).
        """
        errors = []
        while self._added:
            spec = self._added.pop()
            try:
                _iptables("-D", _CHAIN, *spec)
            except ClusterError as exc:
                errors.append(str(exc))
        if _active.get(self.tag) is self:
            del _active[self.tag]
        if errors:
            raise ClusterError("; ".join(errors))


def block_ports(ports: Sequence[int], tag: str) -> PortBlock:
    """Black-hole TCP ``ports`` on loopback until :func:`unblock` (or the process exits).

    Args:
        ports: the ports to block.
        tag: names the block (shows in the rules' comment); blocking a tag already in place does
            nothing more.

    Returns:
        The applied :class:`PortBlock`.

    Raises:
        ClusterError: see :meth:`PortBlock.apply`.
    """
    block = _active.get(tag)
    if block is None:
        block = PortBlock(ports, tag)
        block.apply()
    return block


def unblock(tag: str) -> None:
    """Lift the block named ``tag`` (nothing happens if there is none).

    Raises:
        ClusterError: a rule could not be deleted.
    """
    block = _active.get(tag)
    if block is not None:
        block.remove()


@atexit.register
def _remove_all() -> None:
    for block in list(_active.values()):
        with contextlib.suppress(ClusterError):
            block.remove()
