"""Random and majority baselines (original flags; see `--help`)."""

import sys

from smmile.cli.baselines import main

if __name__ == "__main__":
    sys.exit(main())
