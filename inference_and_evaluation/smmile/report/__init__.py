"""``smmile report``: one self-contained HTML page (plus paper-ready PNG/SVG figures) for one or more results
folders, with a problem explorer; ``smmile figures``: the figures alone. ``build`` gathers the numbers,
``figures`` plans what ``smmile.plotting`` draws (in ``workers``), ``explorer`` assembles the explorer's data;
``html``, ``sections``, ``strata`` and ``explorer_page`` render the page (templates, style and script in
``assets/``); ``page`` writes the report and ``figures_only`` the figures alone."""
