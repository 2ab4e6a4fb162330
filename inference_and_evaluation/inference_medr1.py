"""MedVLM-R1 on SMMILE with the original flags (see `--help`)."""

import sys

from smmile.models.hf.cli import medr1_main

if __name__ == "__main__":
    sys.exit(medr1_main())
