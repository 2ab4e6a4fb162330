"""Llama 3.3 text-only baseline via ollama, open or MCQA (original flags; see `--help`)."""

import sys

from smmile.cli.api_models import textonly_mcqa_main

if __name__ == "__main__":
    sys.exit(textonly_mcqa_main())
