"""MedVLM-R1 on SMMILE with the original flags (see `--help`)."""

import sys

from smmile.cli.local_models import medr1_main

if __name__ == "__main__":
    sys.exit(medr1_main())
