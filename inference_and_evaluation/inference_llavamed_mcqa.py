"""LLaVA-Med, open + MCQA on SMMILE with the original flags (see `--help`)."""

import sys

from smmile.cli.local_models import llavamed_mcqa_main

if __name__ == "__main__":
    sys.exit(llavamed_mcqa_main())
