"""LLaVA family, open + MCQA on SMMILE with the original flags (see `--help`)."""

import sys

from smmile.cli.local_models import llava_mcqa_main

if __name__ == "__main__":
    sys.exit(llava_mcqa_main())
