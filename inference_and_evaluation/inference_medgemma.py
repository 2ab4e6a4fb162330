"""MedGemma 4B on SMMILE with the original flags (see `--help`)."""

import sys

from smmile.cli.local_models import medgemma_main

if __name__ == "__main__":
    sys.exit(medgemma_main())
