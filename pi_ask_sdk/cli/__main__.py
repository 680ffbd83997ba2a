"""``python -m pi_ask_sdk.cli``: the ``pi-ask`` command without its console script."""

import sys

from . import main

sys.exit(main())
