"""Bootstrap mean ± std per model/metric/mode and the summary tables (front door; flags in
smmile.cli.variance, work in smmile.scoring.variance; spec §7).

Usage: python variance_analysis.py ../results [--output F] [--mean_only] [--generate_table]
       [--latex_output F] [--sorted] [--ci]
"""

import sys

from smmile.cli.variance import main

if __name__ == "__main__":
    sys.exit(main())
