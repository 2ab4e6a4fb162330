"""Llama-3.2-90B-Vision-Instruct on SMMILE with the original flags (see `--help`)."""

import sys

from smmile.cli.local_models import llama32v_main

if __name__ == "__main__":
    sys.exit(llama32v_main())
