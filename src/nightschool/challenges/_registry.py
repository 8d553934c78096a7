"""The template bank: lookup by cluster and name."""

from __future__ import annotations

import functools

from nightschool.challenges._model import CLUSTERS, Challenge, Template


@functools.cache
def _bank() -> dict[str, Template]:
    # function-local: start-up time (the bank's ~50 template modules, ~250 ms, load on first use)
    from nightschool.challenges._templates import ALL_TEMPLATES

    return {template.name: template for template in ALL_TEMPLATES}


def templates(cluster: str | None = None) -> list[Template]:
    """Return the bank's templates, sorted by name; only `cluster`'s when given.

    Raises:
        ValueError: if `cluster` is not one of `CLUSTERS`.
    """
    if cluster is not None and cluster not in CLUSTERS:
        raise ValueError(f"unknown cluster {cluster!r}; known clusters: {', '.join(CLUSTERS)}")
    return [t for _, t in sorted(_bank().items()) if cluster is None or t.cluster == cluster]


def get_template(name: str) -> Template:
    """Return the template called `name` (`cluster.short_name`).

    Raises:
        ValueError: if no template has that name; the message lists the known names.
    """
    try:
        return _bank()[name]
    except KeyError:
        known = ", ".join(sorted(_bank()))
        raise ValueError(f"unknown template {name!r}; known templates: {known}") from None


def render(template_name: str, tier: str, seed: int) -> Challenge:
    """Render `template_name` at `tier` from `seed` (deterministic).

    Raises:
        ValueError: on an unknown template name or tier.
    """
    return get_template(template_name).render(tier, seed)
