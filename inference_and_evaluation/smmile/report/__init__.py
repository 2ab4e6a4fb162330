"""``smmile report``: one self-contained HTML page (plus paper-ready PNG/SVG figures) for one or more
results folders, with a problem explorer; ``smmile figures``: the figures alone.

``build`` gathers the numbers (estimates with CIs, ICL gains, strata, the change between folders,
run manifests; ``analyses`` reads analysis outputs), ``figures`` plans the figures that
``smmile.plotting`` draws (``drawing`` runs them in worker processes), ``explorer`` assembles the
problem explorer's data; ``html``, ``sections``, ``side_by_side``, ``strata``, ``analysis_section`` and
``explorer_page`` render the page with the standard library only; ``names`` says what things are
called; ``page`` writes the report and ``figures_only`` the figures alone (the commands parse in
``smmile.cli``).
"""
