"""`python -m smmile.cli`: the `smmile` command."""

import sys

from smmile.cli import main

sys.exit(main())
