"""A report page inline in a notebook: the page of views/report.render, whole, in an <iframe srcdoc>.

The page is the one `irscope report` writes (every string escaped for where it lands, the hashed CSP of
its one script and one style). In a notebook it goes into an iframe's srcdoc, escaped as an attribute,
sandboxed with allow-scripts only: the page's own CSP (its <meta>) applies inside it and its hashed script
runs, while the frame's opaque origin keeps the notebook's scripts out of it and it out of the notebook.
"""

from __future__ import annotations

import html
from typing import Any

from irscope.views import report as report_view

HEIGHT_PX = 760


def iframe(page: str, height: int = HEIGHT_PX, title: str = "irscope report") -> str:
    """The page as one <iframe srcdoc="..."> element (the page escaped for a double-quoted attribute)."""
    return (
        f'<iframe sandbox="allow-scripts" title="{html.escape(title, quote=True)}" '
        f'style="width:100%;height:{int(height)}px;border:1px solid #ccc" '
        f'srcdoc="{html.escape(page, quote=True)}"></iframe>'
    )


def page(model: dict[str, Any]) -> str:
    """The report page of a model (report.model / report.pages), as irscope report writes it."""
    return report_view.render(model)
