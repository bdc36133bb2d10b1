"""``python -m rocketmq_py.cli``: the ``rocketmq-py`` command."""

from rocketmq_py.cli import main

raise SystemExit(main())
