"""GPT-4o via Azure OpenAI or OpenAI (original flags; see `--help`)."""

import sys

from smmile.cli.api_models import openai_main

if __name__ == "__main__":
    sys.exit(openai_main())
