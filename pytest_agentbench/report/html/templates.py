"""A template name + plain values -> HTML text: the report's one jinja2 helper (autoescape always on).

Every template is rendered here, so the escaping rule lives in one place: model and app text
is escaped, and the only raw HTML that gets in is markup this package generated itself (the
inline SVG charts), marked with `|safe` at its one place in the template. Templates get plain
values prepared in Python (strings, numbers, lists, dicts); they hold no logic beyond loops
and `if` on prepared flags.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

TEMPLATE_PACKAGE = "pytest_agentbench.report.html"


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The jinja2 environment over the package's `templates/` (package data), autoescaping `.jinja2` files and strings."""
    return Environment(
        loader=PackageLoader(TEMPLATE_PACKAGE, "templates"),
        autoescape=select_autoescape(enabled_extensions=("jinja2", "html"), default_for_string=True, default=True),
        # A value the Python side forgot to prepare is a bug, not an empty cell.
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_template(name: str, **values: Any) -> str:
    """Render one template of the package with `values` (autoescaped).

    Args:
        name: The template's file name under `templates/` (`report.html.jinja2`).
        **values: The plain values it uses.

    Returns:
        The rendered text.
    """
    return environment().get_template(name).render(**values)


