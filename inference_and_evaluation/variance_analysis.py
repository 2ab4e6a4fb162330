"""Bootstrap mean ± std per model/metric/mode and the summary tables (front door; spec §7).

Usage: python variance_analysis.py ../results [--output F] [--mean_only] [--generate_table]
       [--latex_output F] [--sorted] [--ci]
"""

import sys

from smmile.scoring.variance import main

if __name__ == "__main__":
    sys.exit(main())
