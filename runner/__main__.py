"""`python -m runner` is `agentctl`."""

import sys

from runner.program import main

sys.exit(main())
