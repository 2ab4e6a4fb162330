"""LLaVA family, open format on SMMILE with the original flags (see `--help`)."""

import sys

from smmile.cli.local_models import llava_main

if __name__ == "__main__":
    sys.exit(llava_main())
