"""Entry point of ``python -m rocketmq_py.testing``."""

import sys

from rocketmq_py.testing._cli import main

sys.exit(main())
