"""``rocketmq-py``: routes, topic creation, sending, consuming and group diagnosis from a shell.

Usage::

    rocketmq-py [-n HOST:PORT] route TOPIC [--json]
    rocketmq-py [-n HOST:PORT] topic create TOPIC --queues N [--cluster C] [--order]
    rocketmq-py [-n HOST:PORT] send TOPIC --body TEXT|--body-file F [--tags T] [--keys K1,K2]
                [--property K=V ...] [--count N] [--concurrency C] [--group G] [-q]
    rocketmq-py [-n HOST:PORT] group inspect GROUP [TOPIC] [--json]
    rocketmq-py [-n HOST:PORT] group list [--all] [--json]
    rocketmq-py [-n HOST:PORT] consume TOPIC -g GROUP [--from-beginning] [--count N] [--tag EXPR] [--json]

Every command also takes ``--access-key AK --secret-key SK`` (ACL signing) and ``--tls``,
``--tls-ca-file PATH`` or ``--tls-insecure`` (TLS to every NameServer and broker). The NameServer
defaults to ``ROCKETMQ_NAMESRV``, the ACL keys to ``ROCKETMQ_ACCESS_KEY`` and ``ROCKETMQ_SECRET_KEY``.
Exit codes: 0 success, 1 a RocketMQ error (one line on stderr, no traceback), 2 a usage error, 130
interrupted.

Modules: ``_parser`` (argv -> a typed command) with ``_options`` (the options of every command:
NameServer, timeout, namespace, ACL keys, TLS), ``_commands`` (what each command does),
``_admin`` (NameServer and broker admin calls), ``_format`` (tables), ``_progress``, ``_group``
(``group inspect``'s queries) with ``_inspect`` (its pure comparison), ``_consume``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import trio

from rocketmq_py.cli._parser import PROG, UsageError, parse_command
from rocketmq_py.errors import RocketMQError, leaf_exceptions

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "main"]

#: Exit code: the command succeeded.
EXIT_OK = 0
#: Exit code: a RocketMQ error (one line on stderr, no traceback).
EXIT_ERROR = 1
#: Exit code: a wrong command line (argparse's code).
EXIT_USAGE = 2
#: Exit code: interrupted (Ctrl-C), as shells report SIGINT.
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rocketmq-py`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    Output goes to ``sys.stdout`` (results) and ``sys.stderr`` (errors, progress).
    """
    from rocketmq_py.cli._commands import run_command  # the client stack, only when needed

    out, err = sys.stdout, sys.stderr
    try:
        command = parse_command(sys.argv[1:] if argv is None else argv, os.environ)
    except UsageError as exc:
        err.write(exc.usage)
        err.write(f"{PROG}: error: {exc}\n")
        return EXIT_USAGE
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    try:
        return trio.run(run_command, command, out, err)
    except KeyboardInterrupt:
        err.write(f"\n{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
    except RocketMQError as exc:
        err.write(f"{PROG}: error: {exc}\n")
        return EXIT_ERROR
    except BaseExceptionGroup as group:
        interrupted, others = group.split(KeyboardInterrupt)
        if interrupted is not None and others is None:
            err.write(f"\n{PROG}: interrupted\n")
            return EXIT_INTERRUPTED
        errors, rest = group.split(RocketMQError)
        if errors is None or rest is not None:
            raise
        for leaf in leaf_exceptions(errors):
            err.write(f"{PROG}: error: {leaf}\n")
        return EXIT_ERROR
    finally:
        out.flush()
