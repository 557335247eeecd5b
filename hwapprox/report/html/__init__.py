"""Self-contained HTML reports: ``report.html`` (``hwapprox validate``) and
``summary.html`` (``hwapprox demo``).

Both render a plain JSON dict -- what ``validate.json`` / ``summary.json``
hold -- so they show whatever fields exist: known keys as tables, unknown
scalar keys generically (extra columns or key/value rows), missing keys not
at all. Plots are embedded as base64 ``data:`` URIs; the stylesheet and the
small column-sorting script are inline. Nothing is fetched from the network,
so the file can be mailed or archived on its own. Every text is escaped
(:func:`html.escape`). Nothing here computes a result: it only formats what
the stages measured (the budget verdict is re-derived from the dict when the
dict does not state it).

The page skeleton and the shared cells live in ``_page``; each page in a module of its
own: ``validate`` and ``demo``.
"""

from hwapprox.report.html.demo import demo_html
from hwapprox.report.html.validate import validate_html

__all__ = ["demo_html", "validate_html"]
