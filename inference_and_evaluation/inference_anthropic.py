"""Claude 3.7 Sonnet via the Anthropic API (original flags; see `--help`)."""

import sys

from smmile.cli.api_models import anthropic_main

if __name__ == "__main__":
    sys.exit(anthropic_main())
