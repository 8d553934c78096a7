"""Starter tier of cluster `web_automation`: one function taking a Playwright `page`.

Each function is given a page already open at the task's site (a fresh page
per hidden case) and the case's arguments; the checker compares what it
returns and what the site recorded. Families (`_kit.variant`): the form, table
or sign-in page drawn (its fields, labels and wording), and how its parts are
found (`_web_kit.LOCATE`).
"""

from __future__ import annotations

import random
from typing import Any

from nightschool.challenges._templates._kit import Case, Parts, call, pick, shown_example, variant
from nightschool.challenges._templates._kit import Expr as _Expr
from nightschool.challenges._templates._web_kit import (
    LOCATE,
    field_html,
    fill_var,
    handle_text,
    html_page,
    make_field,
    posted_value,
    q,
    token,
    web_function_parts,
)
from nightschool.challenges._website import Site

PAGE = _Expr("page")
"""The `page` argument as a worked example writes it."""

# form -> (function, (label, handle, kind, values), (label, handle, kind, values), status format)
_FORMS: dict[str, tuple[str, tuple[Any, ...], tuple[Any, ...], str]] = {
    "item": ("add_item", ("Item", "item", "text", ("lamp", "desk", "chair", "shelf", "rug")),
             ("Quantity", "qty", "number", ("1", "2", "3", "4", "6", "9")), "Added {b} x {a}"),
    "contact": ("save_contact", ("Full name", "full-name", "text", ("Ada Byron", "Bo Chen", "Cy Dahl",
                "Di Evans", "Ed Frost")), ("City", "city", "select", ("Lima", "Oslo", "Pune", "Quito")),
                "Saved {a} ({b})"),
    "subscribe": ("subscribe", ("Email", "email", "email", ("ada@mail.test", "bo@mail.test",
                  "cy@web.test", "di@web.test")), ("Plan", "plan", "select", ("Free", "Plus", "Team")),
                  "Subscribed {a} to {b}"),
    "review": ("rate_title", ("Title", "title", "text", ("Dune", "Emma", "Ulysses", "Beloved",
               "Walden")), ("Stars", "stars", "number", ("1", "2", "3", "4", "5")),
               "{a}: {b} stars"),
}  # fmt: skip
FORMS = tuple(_FORMS)
"""Which small form the function fills."""
_BUTTONS = ("Save", "Add", "Send", "Go")


def form_fill(rng: random.Random) -> Parts:
    """Starter of `web_automation.form_fill`: fill a two-field form, return the status text."""
    tags = variant(rng, FORMS, LOCATE)
    form = pick(tags, FORMS)
    style = pick(tags, LOCATE)
    func, first, second, status = _FORMS[form]
    fields = [
        make_field(rng, kind, label, handle, style, values if kind == "select" else (), f"{label}…")
        for label, handle, kind, values in (first, second)
    ]
    button = rng.choice(_BUTTONS)
    status_id = f"status-{token(rng, 3)}"
    action = rng.choice(("/save", "/api/add", "/submit"))
    form_id = f"f{token(rng, 4)}"
    arg_a, arg_b = first[1].replace("-", "_"), second[1].replace("-", "_")
    typed = "int" if second[2] == "number" else "str"
    signature = f"def {func}(page, {arg_a}: str, {arg_b}: {typed}) -> str:"

    def expected(a: str, b: str) -> str:
        return status.format(a=a, b=b)

    def draw(local: random.Random) -> tuple[str, str]:
        return local.choice(first[3]), local.choice(second[3])

    pairs: list[tuple[str, str]] = []
    while len(pairs) < 6:
        pair = draw(rng)
        if pair not in pairs:
            pairs.append(pair)

    def case(pair: tuple[str, str]) -> tuple[Case, list[Any]]:
        b: Any = int(pair[1]) if typed == "int" else pair[1]
        return Case(call(func, PAGE, pair[0], b), expected(*pair)), [pair[0], b]

    hidden = [case(pair) for pair in pairs]
    example = shown_example(rng, lambda local: case(draw(local))[0], [c for c, _a in hidden])
    script = (
        f"document.getElementById('{form_id}').addEventListener('submit', async e => {{\n"
        "  e.preventDefault();\n"
        f"  await fetch('{action}', {{method: 'POST', body: new URLSearchParams(new FormData(e.target))}});\n"
        f"  const a = document.getElementById('{fields[0].ident}');\n"
        f"  const b = document.getElementById('{fields[1].ident}');\n"
        "  const bt = b.tagName === 'SELECT' ? b.options[b.selectedIndex].text : b.value;\n"
        f"  document.getElementById('{status_id}').textContent = "
        f"{_js_format(status)};\n}});"
    )  # fmt: skip
    body = (
        f"<form id='{form_id}'>{field_html(fields[0], style)}{field_html(fields[1], style)}"
        f"<p><button type='submit'>{button}</button></p></form><p id='{status_id}'></p>"
    )
    site = Site(pages={"/": html_page("Form", body, script), "/ok": "ok"}, posts={action: "/ok"})
    steps = [
        fill_var(fields[0], style, arg_a),
        fill_var(fields[1], style, arg_b if typed == "str" else f"str({arg_b})"),
        f"page.get_by_role('button', name={button!r}, exact=True).click()",
        f"page.wait_for_selector({'#' + status_id + ':not(:empty)'!r})",
        f"return page.inner_text({'#' + status_id!r})",
    ]
    wrong = [steps[0], *steps[2:]]  # the second field is left empty
    spec = (
        f"`page` is a Playwright page (sync API) showing a form: {handle_text(fields[0], style)} "
        f"and {handle_text(fields[1], style)}"
        + (" (choose the option whose text is given)" if second[2] == "select" else "")
        + f". Enter `{arg_a}` and `{arg_b}`, click the button {q(button)}, wait for the "
        f"element with id `{status_id}` to show text, and return that text."
    )
    posts = [
        {"path": action, "fields": {fields[0].name: a, fields[1].name: posted_value(fields[1], b)}}
        for a, b in pairs
    ]
    return web_function_parts(
        func=func,
        signature=signature,
        spec=_wrap(spec),
        examples=[example],
        cases=[c for c, _a in hidden],
        site=site,
        reference=_function(signature, steps),
        wrong=_function(signature, wrong),
        posts=posts,
    )


def _js_format(status: str) -> str:
    """A JavaScript template literal for `status` (`{a}` the first field, `{b}` the second)."""
    return "`" + status.replace("{a}", "${a.value}").replace("{b}", "${bt}") + "`"


def _function(signature: str, steps: list[str]) -> str:
    body = "\n".join(f"    {line}" for line in steps)
    return f"{signature}\n{body}\n"


def _wrap(text: str, width: int = 84) -> str:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


# table -> (key column, key values, category column, categories, (number column, type))
_TABLES: dict[str, tuple[str, tuple[str, ...], str, tuple[str, ...], tuple[str, str]]] = {
    "products": ("Product", ("Raven lamp", "Onyx tray", "Dune rake", "Iris hook", "Amber vise",
                 "Cobalt file", "Maple stool", "Quill clamp"), "Category",
                 ("Tools", "Garden", "Kitchen"), ("Stock", "int")),
    "staff": ("Name", ("Ada K.", "Bo L.", "Cy M.", "Di N.", "Ed P.", "Flo R.", "Gus S.", "Hal T."),
              "Team", ("Sales", "Support", "Ops"), ("Desk", "int")),
    "books": ("Title", ("The Raven", "Dune Road", "Iris Hall", "Onyx Bay", "The Quill", "Amber Sky",
              "Maple Lane", "Cobalt Sea"), "Genre", ("Poetry", "Crime", "History"),
              ("Rating", "float")),
}  # fmt: skip
TABLES = tuple(_TABLES)
"""Which table the function reads."""
ASKS = ("number", "category", "count")
"""What it returns: a row's number, a row's category, or how many rows reach a number."""


def table_scan(rng: random.Random) -> Parts:
    """Starter of `web_automation.table_scan`: look one thing up in a table on the page."""
    tags = variant(rng, TABLES, ASKS)
    table = pick(tags, TABLES)
    ask = pick(tags, ASKS)
    key, names, cat, cats, (num, kind) = _TABLES[table]
    columns = [key, cat, num]
    rng.shuffle(columns)
    tbl = f"{table[:3]}-{token(rng, 4)}"
    numbers = rng.sample(range(10, 60), 7)
    rows = [
        {key: name, cat: rng.choice(cats), num: str(n) if kind == "int" else f"{n / 10:.1f}"}
        for name, n in zip(rng.sample(names, 7), numbers, strict=True)
    ]
    typed = {"int": int, "float": float}[kind]
    arg = "minimum" if ask == "count" else key.lower()
    func = {
        "number": f"{num.lower()}_of",
        "category": f"{cat.lower()}_of",
        "count": f"count_{num.lower()}_at_least",
    }[ask]
    returns = {"number": kind, "category": "str", "count": "int"}[ask]
    signature = f"def {func}(page, {arg}: {kind if ask == 'count' else 'str'}) -> {returns}:"

    def value(target: Any, rows_seen: list[dict[str, str]] = rows) -> Any:
        if ask == "count":
            return sum(1 for row in rows_seen if typed(row[num]) >= target)
        found = [row for row in rows_seen if row[key] == target]
        if not found:
            raise ValueError(target)
        return found[0][cat] if ask == "category" else typed(found[0][num])

    targets: list[Any] = (
        [typed(row[num]) for row in rows] if ask == "count" else [row[key] for row in rows]
    )
    last = targets[-1]
    chosen = [last, *rng.sample(targets[:-1], 5)]
    rng.shuffle(chosen)
    hidden = [(Case(call(func, PAGE, t), value(t)), [t]) for t in chosen]
    spare = [t for t in targets if t not in chosen]
    example = Case(call(func, PAGE, spare[0]), value(spare[0]))
    head = "".join(f"<th>{c}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{row[c]}</td>" for c in columns) + "</tr>" for row in rows
    )
    page = html_page(
        table, f"<table id='{tbl}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
    index_key, index_cat, index_num = columns.index(key), columns.index(cat), columns.index(num)
    lines = [
        f"rows = [r.split('\\t') for r in page.locator('#{tbl} tbody tr').all_inner_texts()]",
        "rows = rows[:-1]",
    ]
    if ask == "count":
        lines.append(f"return sum(1 for r in rows if {kind}(r[{index_num}]) >= {arg})")
    else:
        column = index_num if ask == "number" else index_cat
        convert = f"{kind}(cell)" if ask == "number" else "cell"
        lines += [
            f"cell = next(r[{column}].strip() for r in rows if r[{index_key}].strip() == {arg})",
            f"return {convert}",
        ]
    reference = [lines[0], *lines[2:]]
    article = "an int" if kind == "int" else "a float"
    what = {
        "number": f"the {num} of the row whose {key} is `{arg}`, as {article}",
        "category": f"the {cat} of the row whose {key} is `{arg}`",
        "count": f"how many rows have a {num} of at least `{arg}`",
    }[ask]
    spec = (
        f"`page` is a Playwright page (sync API) showing a table with id `{tbl}`: columns "
        f"{', '.join(columns)}, one `<tr>` per row in `<tbody>`. Return {what}."
    )
    return web_function_parts(
        func=func,
        signature=signature,
        spec=_wrap(spec),
        examples=[example],
        cases=[c for c, _a in hidden],
        site=Site(pages={"/": page}),
        reference=_function(signature, reference),
        wrong=_function(signature, lines),
    )


# flow -> (function, (first label, handle, kind, values), (second ...), result format)
_FLOWS: dict[str, tuple[str, tuple[Any, ...], tuple[Any, ...], str]] = {
    "signin": ("sign_in", ("User name", "user", "text", ("ada", "bo.k", "cyrus", "dana_v", "eli",
               "fay")), ("Password", "password", "password", ("pw-1x", "s3cret", "hunter2",
               "opensesame")), "Welcome back, {a}!"),
    "enrol": ("enrol", ("Student name", "student", "text", ("Lea", "Sam", "Ivo", "Noor", "Tam")),
              ("Course", "course", "select", ("Pottery", "Welding", "Spanish")), "{a} is enrolled "
              "on {b}"),
    "ship": ("ship_to", ("Town", "town", "text", ("Bath", "Cork", "Turku", "Graz", "Lund")),
             ("Speed", "speed", "select", ("Standard", "Express", "Overnight")), "Shipping {b} to "
             "{a}"),
}  # fmt: skip
FLOWS = tuple(_FLOWS)
"""Which two-part flow: a sign-in (then a greeting), or a two-step wizard (then a summary)."""


def signin_wizard(rng: random.Random) -> Parts:
    """Starter of `web_automation.signin_wizard`: a sign-in or a two-step wizard, one call each."""
    tags = variant(rng, FLOWS, LOCATE)
    flow = pick(tags, FLOWS)
    style = pick(tags, LOCATE)
    func, first, second, result = _FLOWS[flow]
    fields = [
        make_field(rng, kind, label, handle, style, values if kind == "select" else (), label)
        for label, handle, kind, values in (first, second)
    ]
    arg_a, arg_b = first[1], second[1]
    out_id = f"out-{token(rng, 3)}"
    two_steps = flow != "signin"
    next_text = rng.choice(("Next", "Continue"))
    finish = rng.choice(("Sign in", "Log in")) if not two_steps else rng.choice(("Finish", "Done"))
    paths = ["/login"] if not two_steps else ["/step-1", "/step-2"]
    pairs: list[tuple[str, str]] = []
    while len(pairs) < 6:
        pair = (rng.choice(first[3]), rng.choice(second[3]))
        if pair not in pairs:
            pairs.append(pair)
    hidden = [(Case(call(func, PAGE, a, b), result.format(a=a, b=b)), [a, b]) for a, b in pairs]

    def draw(local: random.Random) -> Case:
        a, b = local.choice(first[3]), local.choice(second[3])
        return Case(call(func, PAGE, a, b), result.format(a=a, b=b))

    example = shown_example(rng, draw, [c for c, _a in hidden])
    if two_steps:
        forms = (
            f"<section id='one'><form data-post='/step-1'>{field_html(fields[0], style)}"
            f"<p><button type='submit'>{next_text}</button></p></form></section>"
            f"<section id='two' class='hidden'><form data-post='/step-2'>"
            f"{field_html(fields[1], style)}<p><button type='submit'>{finish}</button></p></form>"
            "</section>"
        )
    else:
        forms = (
            f"<section id='one'><form data-post='/login'>{field_html(fields[0], style)}"
            f"{field_html(fields[1], style)}<p><button type='submit'>{finish}</button></p>"
            "</form></section>"
        )
    script = (
        "const forms = [...document.querySelectorAll('form[data-post]')];\n"
        "forms.forEach((form, i) => form.addEventListener('submit', async e => {\n"
        "  e.preventDefault();\n"
        "  await fetch(form.dataset.post, {method: 'POST', body: new URLSearchParams(new FormData(form))});\n"
        "  form.parentElement.classList.add('hidden');\n"
        "  if (i + 1 < forms.length) { forms[i + 1].parentElement.classList.remove('hidden'); return; }\n"
        f"  const a = document.getElementById('{fields[0].ident}');\n"
        f"  const b = document.getElementById('{fields[1].ident}');\n"
        "  const bt = b.tagName === 'SELECT' ? b.options[b.selectedIndex].text : b.value;\n"
        f"  document.getElementById('{out_id}').textContent = {_js_format(result)};\n"
        "}));"
    )  # fmt: skip
    body = f"{forms}<p id='{out_id}'></p>"
    site = Site(
        pages={"/": html_page(func, body, script), "/ok": "ok"},
        posts={path: "/ok" for path in paths},
    )
    press = "page.get_by_role('button', name={!r}, exact=True).click()"
    first_fill = fill_var(fields[0], style, arg_a)
    second_fill = fill_var(fields[1], style, arg_b)
    steps = [first_fill]
    if two_steps:
        steps.append(press.format(next_text))
    steps += [second_fill, press.format(finish)]
    tail = [
        f"page.wait_for_selector({'#' + out_id + ':not(:empty)'!r})",
        f"return page.inner_text({'#' + out_id!r})",
    ]
    wrong = [s for s in steps if s != second_fill]  # the second field is left empty
    what = (
        f"{handle_text(fields[0], style)} and {handle_text(fields[1], style)}, then the button "
        f"{q(finish)}"
        if not two_steps
        else f"step one: {handle_text(fields[0], style)}, button {q(next_text)}; step two (shown "
        f"next): {handle_text(fields[1], style)}, button {q(finish)}"
    )
    spec = (
        f"`page` is a Playwright page (sync API) showing a form in "
        f"{'one step' if not two_steps else 'two steps'}: {what}. Enter `{arg_a}` and "
        f"`{arg_b}`"
        + (" (an option's text)" if fields[1].kind == "select" else "")
        + f", then return the text that appears in the element with id `{out_id}`."
    )
    posts: list[dict[str, Any]] = []
    for a, b in pairs:
        values = [(fields[0], a), (fields[1], b)]
        if two_steps:
            posts += [
                {"path": path, "fields": {f.name: posted_value(f, v)}}
                for path, (f, v) in zip(paths, values, strict=True)
            ]
        else:
            posts.append(
                {"path": paths[0], "fields": {f.name: posted_value(f, v) for f, v in values}}
            )
    return web_function_parts(
        func=func,
        signature=f"def {func}(page, {arg_a}: str, {arg_b}: str) -> str:",
        spec=_wrap(spec),
        examples=[example],
        cases=[c for c, _a in hidden],
        site=site,
        reference=_function(
            f"def {func}(page, {arg_a}: str, {arg_b}: str) -> str:", [*steps, *tail]
        ),
        wrong=_function(f"def {func}(page, {arg_a}: str, {arg_b}: str) -> str:", [*wrong, *tail]),
        posts=posts,
    )
