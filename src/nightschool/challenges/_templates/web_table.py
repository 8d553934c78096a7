"""Template `web_automation.table_scan`: read a table on a local page and answer a question.

Each seed draws its task from a family (`AXES`): the table (a stock list, a
staff directory, a library shelf: its own columns, in a random order), the
question (the row with the largest value of a column, how many rows have a
category, a column's total over a category, one row's value) and how the
answer is given (printed, or typed into the page's answer form and sent). The
rows are never shown in the prompt: the program must read them from the page.
Twists: the table spans several pages behind a "next" link; archived rows do
not count; every page orders its columns differently (find them by header).
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any

from nightschool.challenges._templates._kit import (
    FIRST_NAMES,
    WORDS,
    Parts,
    RenderError,
    TemplateBase,
    differs,
    near_miss,
    pick,
    select,
    twists,
    variant,
)
from nightschool.challenges._templates._web_kit import (
    html_page,
    q,
    site_setup,
    token,
    web_prompt,
    web_validator,
)
from nightschool.challenges._templates.starters import web_automation as starters
from nightschool.challenges._website import Site

TABLES = ("products", "staff", "books")
"""Which table: its key column, category column and two number columns."""
QUESTIONS = ("max", "count", "sum", "lookup")
"""The key of the row with the largest value; rows in a category; a total over a category;
one row's value."""
ANSWERS = ("print", "form")
"""Print the answer, or type it into the page's answer form and send it."""
AXES = (TABLES, QUESTIONS, ANSWERS)
"""The family of `web_automation.table_scan`'s program tiers: 24 tasks."""

# table -> (title, key column, category column and values, number columns (name, decimals))
_TABLES: dict[str, tuple[str, str, str, tuple[str, ...], tuple[tuple[str, int], ...]]] = {
    "products": ("Stock list", "Product", "Category", ("Tools", "Garden", "Kitchen", "Office"),
                 (("Price", 2), ("Stock", 0))),
    "staff": ("Team directory", "Name", "Team", ("Sales", "Support", "Design", "Ops"),
              (("Salary", 0), ("Desk", 0))),
    "books": ("Library shelf", "Title", "Genre", ("Poetry", "History", "Crime", "Science"),
              (("Year", 0), ("Copies", 0))),
}  # fmt: skip
_NEXT = ("Next page", "More ›", "Older entries", "Next →")
_ANSWER_LABELS = ("Your answer", "Answer", "Result")
_CHECK_BUTTONS = ("Check", "Submit answer", "Send answer")

_SOURCE = """
    import os
    from playwright.sync_api import sync_playwright


    def read_rows(page):
        headers = [h.strip() for h in page.locator('#@TBL@ thead th').all_inner_texts()]  #+t3
        headers = @HEADERS@  #-t3
        rows = []
        for text in page.locator('#@TBL@ tbody tr').all_inner_texts():  #-t2
        for text in page.locator('#@TBL@ tbody tr:not(.archived)').all_inner_texts():  #+t2
            rows.append(dict(zip(headers, [cell.strip() for cell in text.split('\\t')])))
        return rows[:-1]  #+bug
        return rows  #-bug


    with sync_playwright() as p:
        browser = p.chromium.launch()
        page = browser.new_page()
        page.goto(os.environ['NS_PAGE_URL'])
        rows = read_rows(page)
        while page.get_by_text(@NEXT@, exact=True).count():  #+t1
            page.get_by_text(@NEXT@, exact=True).click()  #+t1
            rows += read_rows(page)  #+t1
        answer = max(rows, key=lambda row: float(row[@NUM@]))[@KEY@]  #+max
        answer = sum(1 for row in rows if row[@CAT@] == @VALUE@)  #+count
        total = sum(float(row[@NUM@]) for row in rows if row[@CAT@] == @VALUE@)  #+sum
        answer = f'{total:.@DEC@f}'  #+sum
        answer = next(row[@NUM@] for row in rows if row[@KEY@] == @VALUE@)  #+lookup
        print(answer)  #+print
        page.get_by_label(@LABEL@, exact=True).fill(str(answer))  #+form
        page.get_by_role('button', name=@BUTTON@, exact=True).click()  #+form
        page.wait_for_selector('#checked')  #+form
        browser.close()
"""


def _keys(rng: random.Random, table: str, count: int) -> list[str]:
    if table == "staff":
        first = rng.sample(FIRST_NAMES, count)
        return [f"{name.capitalize()} {rng.choice('BCDFGHKLMNPRSTVW')}." for name in first]
    words = rng.sample(WORDS, 2 * count)
    if table == "books":
        return [f"The {a.capitalize()} {b}" for a, b in zip(words[::2], words[1::2], strict=True)]
    nouns = ("kettle", "lamp", "stool", "rake", "ladle", "clamp", "tray", "hook", "file", "vise")
    return [f"{w.capitalize()} {rng.choice(nouns)}" for w in words[:count]]


def _number(rng: random.Random, table: str, column: str, decimals: int) -> str:
    if table == "books" and column == "Year":
        return str(rng.randint(1850, 2024))
    if table == "staff" and column == "Salary":
        return str(rng.randrange(30000, 120000, 500))
    if decimals:
        return f"{rng.randint(100, 9999) / 100:.{decimals}f}"
    return str(rng.randint(1, 400))


Page = tuple[list[str], list[tuple[list[str], bool]]]
"""One page of the table: its headers, and its rows (cells in header order, archived)."""


def answer(pages: list[Page], spec: dict[str, Any], tags: set[str]) -> str:
    """What the program with feature `tags` prints for `pages`.

    Raises:
        ValueError, KeyError: where that program would crash.
    """
    first_headers = pages[0][0]
    rows: list[dict[str, str]] = []
    for headers, cells in pages if "t1" in tags else pages[:1]:
        used = headers if "t3" in tags else first_headers
        kept = [row for row, archived in cells if not (archived and "t2" in tags)]
        got = [dict(zip(used, row, strict=True)) for row in kept]
        rows += got[:-1] if "bug" in tags else got
    key, cat, num, value = spec["key"], spec["cat"], spec["num"], spec["value"]
    if "max" in tags:
        return max(rows, key=lambda row: float(row[num]))[key]
    if "count" in tags:
        return str(sum(1 for row in rows if row[cat] == value))
    if "sum" in tags:
        return f"{sum(float(row[num]) for row in rows if row[cat] == value):.{spec['dec']}f}"
    found = [row[num] for row in rows if row[key] == value]
    if not found:
        raise ValueError("no such row")
    return found[0]


class TableScan(TemplateBase):
    """Answer a question about a table (family `AXES`); twists: pages, archived rows, columns."""

    name = "web_automation.table_scan"
    cluster = "web_automation"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.table_scan(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        table = pick(tags, TABLES)
        question = pick(tags, QUESTIONS)
        title, key, cat, cats, nums = _TABLES[table]
        num, dec = rng.choice(nums)
        if question == "sum" and table == "books" and num == "Year":
            num, dec = "Copies", 0
        columns = [key, cat, nums[0][0], nums[1][0]]
        rng.shuffle(columns)
        page_count = 1 if level == 0 else 3
        per_page = 8 if level == 0 else 5
        ref, wrong = tags | twists(level), tags | near_miss(level)
        for _attempt in range(200):
            pages, spec = self._data(rng, table, columns, page_count, per_page, level, num, dec)
            names = [row[heads.index(key)] for heads, rows in pages for row, off in rows if not off]
            spec["value"] = {"count": rng.choice(cats), "sum": rng.choice(cats)}.get(
                question, rng.choice(names) if question == "lookup" else ""
            )
            if question == "lookup" and level >= 2:
                self._archive_twin(rng, pages, key, num, spec["value"])
            want = partial(answer, pages, spec)
            try:
                want(ref)
            except (ValueError, KeyError):
                continue
            if differs(partial(want, ref), partial(want, wrong)) and (
                question != "count" or want(ref) != "0"
            ):
                break
        else:
            raise RenderError(f"{self.name}: no separating data at level {level}")
        expected = want(ref)
        tbl = f"{table[:3]}-{token(rng, 4)}"
        next_text = rng.choice(_NEXT)
        label, button = rng.choice(_ANSWER_LABELS), rng.choice(_CHECK_BUTTONS)
        answer_name = token(rng, 5)
        form = "form" in tags
        site = self._site(title, tbl, pages, next_text, label, button, answer_name, form)
        source = select(_SOURCE, ref)
        wrong_source = select(_SOURCE, wrong)
        fills = {
            "@TBL@": tbl,
            "@HEADERS@": repr(pages[0][0]),
            "@KEY@": repr(key),
            "@CAT@": repr(cat),
            "@NUM@": repr(num),
            "@VALUE@": repr(spec["value"]),
            "@DEC@": str(dec),
            "@NEXT@": repr(next_text),
            "@LABEL@": repr(label),
            "@BUTTON@": repr(button),
        }
        for mark, text in fills.items():
            source, wrong_source = source.replace(mark, text), wrong_source.replace(mark, text)
        number_note = f"{num} has {dec} decimals (like {pages[0][1][0][0][columns.index(num)]})"
        task = {
            "max": f"Which {key.lower()} has the largest {num}?",
            "count": f"How many rows have {cat} {q(spec['value'])}?",
            "sum": f"What is the total {num} of the rows with {cat} {q(spec['value'])}?",
            "lookup": f"What is the {num} of {q(spec['value'])}?",
        }[question]
        shape = {
            "max": f"the {key.lower()} exactly as the table shows it",
            "count": "the number of rows",
            "sum": f"the total with {dec} decimals" if dec else "the total, a whole number",
            "lookup": f"the {num} exactly as the table shows it",
        }[question]
        page_text = (
            f"{q(title)}, a table with id `{tbl}`: a header row (`<thead>`, one `<th>` per "
            f"column) and one `<tr>` per row in `<tbody>`; columns {', '.join(pages[0][0])}; "
            f"{number_note}. The rows are not shown here: read them from the page."
        )
        if form:
            output = (
                f"print nothing; type the answer ({shape}) into the field labelled {q(label)} "
                f"below the table and click the button {q(button)}, once."
            )
        else:
            output = f"print the answer alone on one line: {shape}."
        rules = [
            f"The table spans several pages: the link {q(next_text)} under it opens the next "
            "page (the last page has none). Use the rows of every page.",
            'Archived rows (`<tr class="archived">`, shown struck through) do not count: '
            "leave them out.",
            "Every page orders the columns differently: find each column by its header text "
            "on that page.",
        ]
        data = {"form": form, "answer": expected, "name": answer_name}
        return Parts(
            prompt=web_prompt(
                f"Read the table on the page. {task}", page_text, output, rules, level
            ),
            setup_script=site_setup(site),
            validation_script=web_validator(_BODY, data),
            reference_solution=source,
            wrong_solution=wrong_source,
        )

    def _data(
        self,
        rng: random.Random,
        table: str,
        columns: list[str],
        page_count: int,
        per_page: int,
        level: int,
        num: str,
        dec: int,
    ) -> tuple[list[Page], dict[str, Any]]:
        _title, key, cat, cats, nums = _TABLES[table]
        keys = _keys(rng, table, page_count * per_page)
        pages = []
        for index in range(page_count):
            headers = list(columns)
            if level >= 3 and index:
                while headers == columns:
                    rng.shuffle(headers)
            rows = []
            for name in keys[index * per_page : (index + 1) * per_page]:
                values = {key: name, cat: rng.choice(cats)}
                values.update({n: _number(rng, table, n, d) for n, d in nums})
                rows.append(([values[h] for h in headers], level >= 2 and rng.random() < 0.25))
            pages.append((headers, rows))
        return pages, {"key": key, "cat": cat, "num": num, "dec": dec}

    @staticmethod
    def _archive_twin(rng: random.Random, pages: list[Page], key: str, num: str, name: str) -> None:
        """Put an archived row for `name`, with another `num`, just before its current one."""
        for headers, rows in pages:
            for index, (row, _off) in enumerate(rows):
                if row[headers.index(key)] == name:
                    twin = list(row)
                    column = headers.index(num)
                    twin[column] = str(int(float(twin[column])) + rng.randint(1, 9))
                    if "." in row[column]:
                        twin[column] = f"{float(twin[column]):.2f}"
                    rows.insert(index, (twin, True))
                    return

    def _site(
        self,
        title: str,
        tbl: str,
        pages: list[Page],
        next_text: str,
        label: str,
        button: str,
        answer_name: str,
        form: bool,
    ) -> Site:
        html_pages = {}
        for index, (headers, rows) in enumerate(pages, start=1):
            head = "".join(f"<th>{h}</th>" for h in headers)
            body = "".join(
                ("<tr class='archived'>" if archived else "<tr>")
                + "".join(f"<td>{cell}</td>" for cell in row)
                + "</tr>"
                for row, archived in rows
            )
            nav = (
                f"<p><a href='/?page={index + 1}'>{next_text}</a></p>" if index < len(pages) else ""
            )
            answer_form = (
                f"<form method='post' action='/answer'><label for='ans'>{label}</label>"
                f"<input id='ans' name='{answer_name}'> <button type='submit'>{button}</button>"
                "</form>"
                if form
                else ""
            )
            content = (
                f"<h1>{title}</h1><p>Page {index} of {len(pages)}</p>"
                f"<table><tr><th>Opening hours</th><td>9-17</td></tr></table><br>"
                f"<table id='{tbl}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"{nav}{answer_form}"
            )
            address = "/" if index == 1 else f"/?page={index}"
            html_pages[address] = html_page(title, content)
        html_pages["/checked"] = html_page("Checked", "<p id='checked'>Answer received.</p>")
        return Site(pages=html_pages, posts={"/answer": "/checked"})


_BODY = """
out = run_web_solution(SOLUTION)
record = site_record()
if DATA["form"]:
    sent = posts(record, "/answer")
    if len(sent) != 1:
        fail("expected exactly one post of the answer form; the site saw:\\n"
             + describe_hits(record))
    check_fields(sent[0], {DATA["name"]: DATA["answer"]}, "the answer form")
else:
    check_lines(out, [DATA["answer"]], "stdout")
passed()
"""
