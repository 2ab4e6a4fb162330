"""Qwen2.5-VL 3B/7B/32B/72B on SMMILE with the original flags (see `--help`)."""

import sys

from smmile.cli.local_models import qwen_main

if __name__ == "__main__":
    sys.exit(qwen_main())
