"""Template `web_automation.form_fill`: fill in and send a form on a local page.

Each seed draws its task from a family (`AXES`): the form (a support ticket, a
room booking, a membership, a shop order: its own fields, labels and values),
how the fields are found (`_web_kit.LOCATE`: by id, label, name or
placeholder) and how the form is sent (its button, among a decoy; Enter in a
field; a link). Which fields appear, in what order, and every value are drawn
too. The validator checks the site's record: exactly one post of the form,
with exactly the expected fields. Twists: a consent checkbox; a dropdown whose
"Other" reveals a field to fill; printing the reference the thank-you page shows.
"""

from __future__ import annotations

import random

from nightschool.challenges._templates._kit import Parts, RenderError, TemplateBase, pick, variant
from nightschool.challenges._templates._web_kit import (
    LOCATE,
    Field,
    field_html,
    fill_step,
    handle_text,
    html_page,
    locator,
    make_field,
    posted_value,
    program,
    q,
    site_setup,
    token,
    web_prompt,
    web_validator,
)
from nightschool.challenges._templates.starters import web_automation as starters
from nightschool.challenges._website import Site

FORMS = ("ticket", "booking", "membership", "order")
"""What the form is for (each has its own fields)."""
SUBMITS = ("button", "enter", "link")
"""How the form is sent: its button (a decoy beside it), Enter in the last field, a link."""
AXES = (FORMS, LOCATE, SUBMITS)
"""The family of `web_automation.form_fill`'s program tiers: 48 tasks."""

# form -> (title, action paths, [(kind, label, handle, placeholder, values or options)])
_SPECS: dict[str, tuple[str, tuple[str, ...], list[tuple[str, str, str, str, tuple[str, ...]]]]] = {
    "ticket": (
        "Open a support ticket",
        ("/tickets/new", "/support/open", "/help/ticket"),
        [
            ("text", "Your name", "cust-name", "Jane Doe", ("Nina Okafor", "Li Wei", "Tom Berg")),
            ("email", "Email", "cust-email", "you@example.com", ("nina@mail.test", "li@web.test")),
            ("select", "Category", "category", "", ("Billing", "Login", "Shipping", "Refund")),
            ("number", "Order number", "order-no", "e.g. 12345", ("48213", "90412", "11807")),
            ("textarea", "Describe the problem", "details", "What happened?",
             ("Parcel arrived damaged", "Cannot reset password", "Charged twice")),
        ],
    ),
    "booking": (
        "Book a room",
        ("/book", "/rooms/reserve", "/reservations"),
        [
            ("text", "Guest name", "guest-name", "Full name", ("Ana Ruiz", "Omar Haddad", "Kim Lee")),
            ("date", "Arrival", "arrival", "", ("2025-05-03", "2025-11-21", "2026-01-09")),
            ("number", "Nights", "nights", "1-14", ("2", "3", "7")),
            ("select", "Room type", "room", "", ("Single", "Double", "Suite", "Family")),
            ("tel", "Phone", "phone", "+1 555 0100", ("+44 20 7946 0958", "+1 555 0134")),
        ],
    ),
    "membership": (
        "Join the club",
        ("/join", "/members/apply", "/signup"),
        [
            ("text", "First name", "first-name", "First", ("Maya", "Jonas", "Priya")),
            ("text", "Last name", "last-name", "Last", ("Lind", "Osei", "Kowalski")),
            ("email", "Email address", "email", "name@example.com", ("maya@club.test", "jo@x.test")),
            ("select", "Plan", "plan", "", ("Monthly", "Yearly", "Student", "Family")),
            ("number", "Age", "age", "years", ("19", "34", "61")),
        ],
    ),
    "order": (
        "Place an order",
        ("/order", "/shop/checkout", "/orders/create"),
        [
            ("text", "Product code", "sku", "ABC-123", ("LMP-204", "CHR-881", "DSK-310")),
            ("number", "Quantity", "qty", "1", ("2", "5", "12")),
            ("select", "Colour", "colour", "", ("Black", "White", "Oak", "Teal")),
            ("text", "Delivery city", "city", "City", ("Lisbon", "Tartu", "Leeds", "Osaka")),
            ("textarea", "Notes for the courier", "notes", "Optional",
             ("Leave at the door", "Call on arrival", "Side entrance")),
        ],
    ),
}  # fmt: skip
_BUTTONS = ("Send", "Submit request", "Save and send", "Confirm")
_DECOYS = ("Clear", "Cancel", "Reset form")
_LINKS = ("Send it ›", "Continue →", "Finish here")
_CONSENT = ("I accept the terms", "I agree to the rules", "Yes, I have read the policy")
_OTHER_LABELS = ("Please specify", "Which one?", "Tell us more")
_OTHER_VALUES = ("Gift card", "Wheelchair access", "Late check-out", "Bulk discount")

RULES = [
    "The form also has a checkbox; tick it (its handle is given above): the site must "
    "receive it ticked.",
    "Choose {other} in {select}: a new field then appears, {specify}: fill it with {value}.",
    "After sending, the page shows a reference like `RF-12345` in the element with id "
    "`{ref_id}`: print that reference, alone on one line.",
]


def _fields(rng: random.Random, form: str, style: str, count: int) -> list[tuple[Field, str]]:
    """`count` of the form's fields in a random order, each with the value to enter."""
    specs = rng.sample(_SPECS[form][2], count)
    out = []
    for kind, label, handle, placeholder, values in specs:
        options = values if kind == "select" else ()
        field = make_field(rng, kind, label, handle, style, options, placeholder)
        if style == "placeholder" and not placeholder and kind not in ("select", "checkbox"):
            field = make_field(rng, kind, label, handle, style, options, f"{label}…")
        out.append((field, rng.choice(values)))
    return out


class FormFill(TemplateBase):
    """Fill in and send a form (family `AXES`); twists: consent, a revealed field, a reference."""

    name = "web_automation.form_fill"
    cluster = "web_automation"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.form_fill(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        form = pick(tags, FORMS)
        style = pick(tags, LOCATE)
        submit = pick(tags, SUBMITS)
        title, actions, _specs = _SPECS[form]
        action = rng.choice(actions)
        fields = _fields(rng, form, style, (3, 3, 4, 4)[level])
        if submit == "enter" and fields[-1][0].kind in ("select", "textarea", "date"):
            text_like = [
                i
                for i, (f, _v) in enumerate(fields)
                if f.kind not in ("select", "textarea", "date")
            ]
            if not text_like:
                raise RenderError(f"{self.name}: no field to press Enter in")
            fields.append(fields.pop(text_like[-1]))
        hidden = ("form_token", token(rng, 10))
        form_id = f"form-{token(rng, 4)}"
        values = list(fields)
        consent = other = other_select = None
        if level >= 1:
            consent = make_field(rng, "checkbox", rng.choice(_CONSENT), "consent", style)
            values.append((consent, "yes"))
        selects = [(i, f) for i, (f, _v) in enumerate(values) if f.kind == "select"]
        if level >= 2:
            if not selects:
                spec = next(s for s in _SPECS[form][2] if s[0] == "select")
                field = make_field(rng, "select", spec[1], spec[2], style, spec[4])
                values.insert(rng.randrange(len(values)), (field, ""))
                selects = [(i, f) for i, (f, _v) in enumerate(values) if f.kind == "select"]
            index, select = selects[0]
            other_text = "Other"
            select = Field(
                select.kind, select.label, select.name, select.ident, "",
                (*select.options, (f"o{token(rng, 3)}", other_text)),
            )  # fmt: skip
            values[index] = (select, other_text)
            other_select = select
            specify_label = rng.choice(_OTHER_LABELS)
            other = make_field(rng, "text", specify_label, "specify", style, (), specify_label)
            values.insert(index + 1, (other, rng.choice(_OTHER_VALUES)))
        ref_id = f"ref-{token(rng, 3)}"
        reference_code = f"RF-{rng.randrange(10000, 99999)}"
        button = rng.choice(_BUTTONS)
        page, send_step, send_text = self._page(
            rng, title, action, form_id, hidden, values, style, submit, button, other
        )
        done = html_page("Thank you", f"<h1>Thank you</h1><p>We got your form.</p>"
                         f"<p>Reference: <b id='{ref_id}'>{reference_code}</b></p>")  # fmt: skip
        site = Site(pages={"/": page, "/thanks": done}, posts={action: "/thanks"})
        steps = [fill_step(f, style, v) for f, v in values]
        wrong_steps = list(steps)
        if level == 0:
            wrong_steps = steps[:-1]  # the basic near-miss leaves the last field empty
        elif level == 1 and consent is not None:
            wrong_steps = [s for s, (f, _v) in zip(steps, values, strict=True) if f is not consent]
        elif level == 2 and other is not None:
            wrong_steps = [s for s, (f, _v) in zip(steps, values, strict=True) if f is not other]
        tail = [send_step]
        wrong_tail = [send_step]
        if level >= 3:
            tail.append(f"print(page.inner_text({'#' + ref_id!r}).strip())")
            wrong_tail.append(f"page.wait_for_selector({'#' + ref_id!r})")
        expected = {hidden[0]: hidden[1]}
        expected.update({f.name: posted_value(f, v) for f, v in values})
        in_rules = (consent, other, other_select)  # described by the extra rules instead
        shown = [(f, v) for f, v in values if not any(f is r for r in in_rules)]
        listing = "; ".join(
            f"{handle_text(f, style)}: {q(v)}"
            + (" (an option's text)" if f.kind == "select" else "")
            for f, v in shown
        )
        rules = [
            RULES[0].replace("its handle is given above", handle_text(consent, style))
            if consent is not None
            else RULES[0],
            RULES[1].format(
                other=q("Other"),
                select=handle_text(other_select, style) if other_select is not None else "",
                specify=handle_text(other, style) if other is not None else "",
                value=q(values[selects[0][0] + 1][1]) if other is not None and selects else "",
            ),
            RULES[2].format(ref_id=ref_id),
        ]
        task = f"On the page, fill in the form {q(title)} and send it, once."
        page_text = f"{listing}. {send_text}"
        output = (
            "nothing to print: the site records what the form sent (exactly one submission, "
            "every field above filled in)."
        )
        if level >= 3:
            output = "the reference shown after sending (see the extra rules)."
        data = {
            "action": action,
            "fields": expected,
            "print": reference_code if level >= 3 else None,
        }
        return Parts(
            prompt=web_prompt(task, page_text, output, rules, level),
            setup_script=site_setup(site),
            validation_script=web_validator(_BODY, data),
            reference_solution=program([*steps, *tail]),
            wrong_solution=program([*wrong_steps, *wrong_tail]),
        )

    def _page(
        self,
        rng: random.Random,
        title: str,
        action: str,
        form_id: str,
        hidden: tuple[str, str],
        values: list[tuple[Field, str]],
        style: str,
        submit: str,
        button: str,
        other: Field | None,
    ) -> tuple[str, str, str]:
        """(the form page's HTML, the reference's send statement, how the prompt says to send)."""
        rows = []
        for field, _value in values:
            row = field_html(field, style)
            if field is other:
                row = f"<div id='box-{field.ident}' class='hidden'>{row}</div>"
            rows.append(row)
        decoy = rng.choice(_DECOYS)
        script = ""
        if submit == "button":
            controls = (
                f"<button type='button' onclick='this.form.reset()'>{decoy}</button> "
                f"<button type='submit'>{button}</button>"
            )
            step = f"page.get_by_role('button', name={button!r}, exact=True).click()"
            said = f"Send it with the button {q(button)} (the button {q(decoy)} empties the form)."
        elif submit == "enter":
            last = values[-1][0] if values[-1][0] is not other else values[-2][0]
            controls = "<p><small>Press Enter to send.</small></p>"
            script += (
                f"document.getElementById('{last.ident}').addEventListener('keydown', e => {{"
                f" if (e.key === 'Enter') {{ e.preventDefault();"
                f" document.getElementById('{form_id}').requestSubmit(); }} }});\n"
            )
            step = f"{locator(last, style)}.press('Enter')"
            said = (
                f"The form has no send button: pressing Enter in {handle_text(last, style)} "
                "sends it."
            )
        else:
            link = rng.choice(_LINKS)
            controls = (
                f"<p><a href='#' id='go-{token(rng, 3)}' onclick=\"event.preventDefault();"
                f" document.getElementById('{form_id}').requestSubmit();\">{link}</a></p>"
            )
            step = f"page.get_by_text({link!r}, exact=True).click()"
            said = f"Send it with the link {q(link)} below the form."
        if other is not None:
            select = next(f for f, _v in values if f.kind == "select")
            other_value = next(v for v, text in select.options if text == "Other")
            script += (
                f"document.getElementById('{select.ident}').addEventListener('change', e => {{"
                f" const box = document.getElementById('box-{other.ident}');"
                f" const on = e.target.value === '{other_value}';"
                f" box.classList.toggle('hidden', !on);"
                f" document.getElementById('{other.ident}').disabled = !on; }});\n"
                f"document.getElementById('{other.ident}').disabled = true;\n"
            )
        body = (
            f"<h1>{title}</h1>\n<form id='{form_id}' method='post' action='{action}'>\n"
            f"<input type='hidden' name='{hidden[0]}' value='{hidden[1]}'>\n"
            + "\n".join(rows)
            + f"\n<p>{controls}</p>\n</form>"
        )
        return html_page(title, body, script), step, said


_BODY = """
out = run_web_solution(SOLUTION)
record = site_record()
sent = posts(record, DATA["action"])
if len(sent) != 1:
    fail(f"expected exactly one post of the form to {DATA['action']}; the site saw:\\n"
         + describe_hits(record))
check_fields(sent[0], DATA["fields"], "the form")
if DATA["print"] is not None:
    check_lines(out, [DATA["print"]], "stdout")
passed()
"""
