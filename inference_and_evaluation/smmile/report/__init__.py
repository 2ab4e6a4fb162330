"""``smmile report``: one self-contained HTML page (plus PNG/SVG figures) for a results directory.

``build`` gathers the numbers (estimates with CIs, ICL gains, stratification, analyses, run
manifests), ``figures`` draws them through ``smmile.scoring.plots``, ``html`` renders the page with
the standard library only, ``cli`` is the command line.
"""
