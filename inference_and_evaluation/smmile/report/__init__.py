"""``smmile report``: one self-contained HTML page (plus paper-ready PNG/SVG figures) for one or more results
folders, with a problem explorer; ``smmile figures``: the figures alone. Its modules: docs/architecture.md."""
