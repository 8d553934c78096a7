"""Building blocks of the `web_automation` templates: pages, fields, prompts, validators.

A web challenge's setup writes the site (`site_setup`, `_website.Site`); its
solution is a Python program (`program`) or, at `starter`, one function taking
a Playwright `page` (`web_function_parts`), written against Playwright's sync
API and run in the sandbox through the browser bridge (`challenges._webrun`).
The validator (`web_validator`: `_checklib`, then `_checklib_web`, then the
template's body) runs the solution and checks what the site recorded.

Fields are found one of four ways (`LOCATE`), drawn per seed: by `id`, by
`label`, by `name` or by `placeholder`; the page is built so that only the
drawn handle is meaningful (the other attributes are random), the prompt names
only that handle, and the reference uses the matching Playwright locator.
"""

from __future__ import annotations

import functools
import html
import random
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from nightschool.challenges._templates._kit import (
    Case,
    Parts,
    _checklib,
    _checklib_starter,
    function_prompt,
    literal,
)
from nightschool.challenges._website import SITE_FILE, Site

SOLUTION = "solution.py"
"""The solution file of every web challenge."""

LOCATE = ("id", "label", "name", "placeholder")
"""How the prompt names a page's fields, and how the reference finds them."""

_SCRIPT_PART = "# --- script part: validators include the text from here on ---\n"

WEB_RULE = (
    "Write a Python program `solution.py`. It is run as `python3 solution.py` with the "
    "environment variable `NS_PAGE_URL` holding the page's address (a site served on "
    "127.0.0.1 for this task; nothing else is reachable). Drive the page with Playwright's "
    "sync API: `from playwright.sync_api import sync_playwright`, `p.chromium.launch()`, "
    "`browser.new_page()`, `page.goto(os.environ['NS_PAGE_URL'])`. It must exit with status 0."
)
"""The last paragraph of every program-tier prompt."""

STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:46em}label{display:block;margin-top:.6em}"
    "table{border-collapse:collapse}td,th{border:1px solid #999;padding:.2em .6em}"
    ".hidden{display:none}tr.archived{text-decoration:line-through;opacity:.55}"
)


@functools.cache
def _checklib_web() -> str:
    text = resources.files(__package__).joinpath("_checklib_web.py").read_text(encoding="utf-8")
    return text.split(_SCRIPT_PART, 1)[1]


def web_validator(body: str, data: Any, *, starter: bool = False) -> str:
    """A web validation script: the checker libraries, `SOLUTION`, `DATA`, then `body`.

    `body` uses `_checklib`'s and `_checklib_web`'s names (a `starter`'s also
    `_checklib_starter`'s) plus `DATA` (the JSON-able `data`); it must end by
    calling `passed()` or `fail(...)`.
    """
    starter_part = "\n\n# --- starter checks ---\n" + _checklib_starter() if starter else ""
    return (
        _checklib()
        + starter_part
        + "\n\n# --- web checks ---\n"
        + _checklib_web()
        + "\n\n# --- challenge-specific part ---\n"
        + f"SOLUTION = {SOLUTION!r}\n"
        + f"DATA = {literal(data)}\n"
        + textwrap.dedent(body).strip()
        + "\n"
    )


def site_setup(site: Site) -> str:
    """The setup script writing `site` as `SITE_FILE` (the host serves it)."""
    return (
        "import pathlib\n"
        f"pathlib.Path({SITE_FILE!r}).write_text({site.to_json()!r}, encoding='utf-8')\n"
    )


def web_prompt(task: str, page: str, output: str, rules: Sequence[str], tier: int) -> str:
    """Compose a program-tier prompt.

    Args:
        task: one or two sentences saying what to do on the site.
        page: what the page holds and what to enter (field handles, values).
        output: what to print, or that nothing is printed.
        rules: the template's twists in tier order; the first `tier` are stated.
        tier: twist count (0 basic ... 3 expert).
    """
    parts = [
        textwrap.dedent(task).strip(),
        "The page: " + textwrap.dedent(page).strip(),
        "Output: " + textwrap.dedent(output).strip(),
    ]
    if tier:
        bullets = "\n".join(f"- {textwrap.dedent(rule).strip()}" for rule in rules[:tier])
        parts.append("Extra rules at this level:\n" + bullets)
    parts.append(WEB_RULE)
    return "\n\n".join(parts) + "\n"


def program(steps: Iterable[str]) -> str:
    """A solution program: open the page at `NS_PAGE_URL`, run `steps`, close the browser.

    Args:
        steps: source lines of the body, unindented (nested blocks indented by 4).
    """
    body = textwrap.indent("\n".join(steps), " " * 4)
    return (
        "import os\nfrom playwright.sync_api import sync_playwright\n\n\n"
        "with sync_playwright() as p:\n"
        "    browser = p.chromium.launch()\n"
        "    page = browser.new_page()\n"
        "    page.goto(os.environ['NS_PAGE_URL'])\n"
        f"{body}\n"
        "    browser.close()\n"
    )


def html_page(title: str, body: str, script: str = "") -> str:
    """A whole HTML document with the shared style; `script` goes at the end of the body."""
    tail = f"<script>\n{textwrap.dedent(script).strip()}\n</script>" if script.strip() else ""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>\n{textwrap.dedent(body).strip()}\n{tail}\n"
        "</body></html>"
    )


def token(rng: random.Random, size: int = 6) -> str:
    """A random lowercase token of `size` letters and digits (ids, names, codes)."""
    return "".join(rng.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(size))


def q(text: str) -> str:
    """`text` in typographic quotes, as prompts show labels and button texts."""
    return f"“{text}”"


@dataclass(frozen=True)
class Field:
    """One form control.

    Attributes:
        kind: `text`, `email`, `number`, `date`, `tel`, `textarea`, `select`
            or `checkbox`.
        label: the visible label.
        name: the `name` it is posted under.
        ident: its `id`.
        placeholder: its placeholder text ("" for selects and checkboxes).
        options: a select's options as (value, visible text) pairs.
    """

    kind: str
    label: str
    name: str
    ident: str
    placeholder: str = ""
    options: tuple[tuple[str, str], ...] = ()


def make_field(
    rng: random.Random,
    kind: str,
    label: str,
    handle: str,
    style: str,
    options: Sequence[str] = (),
    placeholder: str = "",
) -> Field:
    """A field whose drawn `style` handle is meaningful and whose other attributes are random.

    Args:
        rng: the seed's generator.
        kind: the control's kind (`Field.kind`).
        label: its visible label.
        handle: a meaningful slug (`guest-name`) used as the id (style `id`) or the
            name (style `name`).
        style: one of `LOCATE`.
        options: a select's visible option texts (values are random slugs).
        placeholder: the placeholder for style `placeholder` (and shown otherwise).
    """
    ident = handle if style == "id" else f"f-{token(rng, 5)}"
    name = handle.replace("-", "_") if style == "name" else token(rng, 4)
    opts = tuple((f"o{token(rng, 3)}", text) for text in options)
    shown = placeholder if kind not in ("select", "checkbox") else ""
    return Field(kind, label, name, ident, shown, opts)


def field_html(field: Field, style: str) -> str:
    """The HTML of `field` (its label too, except for style `placeholder`)."""
    ident, name = html.escape(field.ident, quote=True), html.escape(field.name, quote=True)
    label = html.escape(field.label)
    place = (
        f" placeholder='{html.escape(field.placeholder, quote=True)}'" if field.placeholder else ""
    )
    if field.kind == "checkbox":
        return (
            f"<label><input type='checkbox' id='{ident}' name='{name}' value='yes'> {label}</label>"
        )
    if field.kind == "select":
        options = "".join(
            f"<option value='{html.escape(v, quote=True)}'>{html.escape(t)}</option>"
            for v, t in field.options
        )
        control = f"<select id='{ident}' name='{name}'><option value=''>choose…</option>{options}</select>"
    elif field.kind == "textarea":
        control = f"<textarea id='{ident}' name='{name}'{place}></textarea>"
    else:
        control = f"<input type='{field.kind}' id='{ident}' name='{name}'{place}>"
    if style == "placeholder" and field.kind not in ("select", "checkbox"):
        return f"<div>{control}</div>"
    return f"<label for='{ident}'>{label}</label>{control}"


def locator(field: Field, style: str) -> str:
    """Python source of a Playwright locator for `field` in the drawn `style` (on `page`)."""
    if field.kind in ("select", "checkbox") and style == "placeholder":
        style = "label"  # selects and checkboxes have no placeholder: found by label
    if style == "id":
        return f"page.locator({'#' + field.ident!r})"
    if style == "name":
        return f"page.locator({f'[name={field.name}]'!r})"
    if style == "placeholder":
        return f"page.get_by_placeholder({field.placeholder!r}, exact=True)"
    return f"page.get_by_label({field.label!r}, exact=True)"


def handle_text(field: Field, style: str) -> str:
    """How the prompt names `field` in the drawn `style`, e.g. the input with id `guest-name`."""
    if field.kind in ("select", "checkbox") and style == "placeholder":
        style = "label"
    kind = {"select": "dropdown", "checkbox": "checkbox", "textarea": "text area"}.get(
        field.kind, f"{field.kind} input"
    )
    if style == "id":
        return f"the {kind} with id `{field.ident}`"
    if style == "name":
        return f"the {kind} named `{field.name}`"
    if style == "placeholder":
        return f"the {kind} whose placeholder reads {q(field.placeholder)}"
    return f"the {kind} labelled {q(field.label)}"


def fill_step(field: Field, style: str, value: str) -> str:
    """The reference's statement entering `value` in `field` (a select: by option text)."""
    where = locator(field, style)
    if field.kind == "select":
        return f"{where}.select_option(label={value!r})"
    if field.kind == "checkbox":
        return f"{where}.check()"
    return f"{where}.fill({value!r})"


def fill_var(field: Field, style: str, variable: str) -> str:
    """The statement entering the value of the Python variable `variable` in `field`."""
    where = locator(field, style)
    if field.kind == "select":
        return f"{where}.select_option(label={variable})"
    return f"{where}.fill({variable})"


def posted_value(field: Field, value: str) -> str:
    """What the browser posts for `field` once `value` is entered (a select: the option's value)."""
    if field.kind == "select":
        return next(v for v, text in field.options if text == value)
    if field.kind == "checkbox":
        return "yes"
    return value


def web_function_parts(
    *,
    func: str,
    signature: str,
    spec: str,
    examples: Sequence[Case],
    cases: Sequence[Case],
    site: Site,
    reference: str,
    wrong: str,
    posts: Sequence[dict[str, Any]] | None = None,
) -> Parts:
    """Assemble a starter: one function `func(page, ...)` called on hidden cases.

    Args:
        func: the function's name.
        signature: its `def` line.
        spec: its docstring text.
        examples: worked examples (their calls write the page as `page`).
        cases: the hidden cases (5-8).
        site: the page(s) every case starts on (a fresh page per case).
        reference: a correct solution.
        wrong: a near-miss.
        posts: the form posts every case together must make, in order, as
            `{"path": ..., "fields": {...}}`; None checks no posts.
    """
    data = {
        "func": func,
        "tol": 1e-6,
        "cases": [case.data() for case in cases],
        "posts": None if posts is None else list(posts),
    }
    return Parts(
        prompt=function_prompt(func, signature, spec, examples),
        setup_script=site_setup(site),
        validation_script=web_validator(STARTER_BODY, data, starter=True),
        reference_solution=reference,
        wrong_solution=wrong,
    )


STARTER_BODY = """
check_web_calls(SOLUTION, DATA)
if DATA["posts"] is not None:
    record = site_record()
    sent = posts(record)
    expected = DATA["posts"]
    if len(sent) != len(expected):
        fail(f"expected {len(expected)} form posts over the calls, the site saw "
             f"{len(sent)}:\\n{describe_hits(sent)}")
    for index, (hit, want) in enumerate(zip(sent, expected)):
        if hit["path"] != want["path"]:
            fail(f"post {index + 1} went to {hit['path']}, expected {want['path']}")
        check_fields(hit, want["fields"], f"form post {index + 1}")
passed()
"""
"""Validator body of every web starter: the calls' return values, then the posts in order."""
