"""Template `web_automation.signin_wizard`: sign in, then complete a multi-step wizard.

Each seed draws its task from a family (`AXES`): the wizard (an insurance
claim, a trip booking, a course enrolment, a shop checkout: its own steps,
fields and values), how its steps move on (`server`: one page per step, each
posted to the site; `client`: one page whose script shows the steps in turn,
saving each with a request of its own) and how fields are found
(`_web_kit.LOCATE`). The validator checks the site's record: the sign-in post,
then every step's post in order, each with exactly its fields and the login
cookie. Twists: a number shown in the first step must be entered in the last;
the site inserts an extra step; the given password has expired (the sign-in
page shows the new one).
"""

from __future__ import annotations

import random

from nightschool.challenges._templates._kit import Parts, TemplateBase, pick, variant
from nightschool.challenges._templates._web_kit import (
    LOCATE,
    Field,
    field_html,
    fill_step,
    fill_var,
    handle_text,
    html_page,
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
from nightschool.challenges._website import Login, Site

WIZARDS = ("claim", "trip", "course", "checkout")
"""What the wizard is for (each has its own steps)."""
NAVS = ("server", "client")
"""One page per step posted to the site, or one page whose script shows the steps."""
AXES = (WIZARDS, NAVS, LOCATE)
"""The family of `web_automation.signin_wizard`'s program tiers: 32 tasks."""

_Spec = tuple[str, str, str, tuple[str, ...]]  # (kind, label, handle, values)
# wizard -> (title, [(step title, [field specs])], extra step)
_WIZARDS: dict[str, tuple[str, list[tuple[str, list[_Spec]]], tuple[str, list[_Spec]]]] = {
    "claim": ("Open a claim", [
        ("Policy", [("text", "Policy number", "policy", ("PX-2231", "PX-7710", "PX-5092"))]),
        ("Incident", [("date", "Date of loss", "loss-date", ("2025-02-11", "2025-08-30")),
                      ("select", "Type", "loss-type", ("Theft", "Water", "Fire"))]),
        ("Payout", [("text", "IBAN", "iban", ("DE44 5001 0517", "NL91 ABNA 0417"))]),
    ], ("Police report", [("text", "Report number", "report", ("R-118", "R-904"))])),
    "trip": ("Book a trip", [
        ("Traveller", [("text", "Traveller name", "traveller", ("Ines Duarte", "Karl Weiss"))]),
        ("Journey", [("select", "Destination", "dest", ("Porto", "Kyoto", "Quebec")),
                     ("number", "Nights", "nights", ("3", "5", "9"))]),
        ("Extras", [("select", "Meal plan", "meals", ("None", "Breakfast", "Half board"))]),
    ], ("Visa", [("text", "Passport number", "passport", ("X1234567", "P7654321"))])),
    "course": ("Enrol on a course", [
        ("You", [("text", "Student name", "student", ("Lea Novak", "Sam Otieno"))]),
        ("Course", [("select", "Course", "course", ("Pottery", "Welding", "Spanish")),
                    ("select", "Term", "term", ("Spring", "Autumn"))]),
        ("Contact", [("email", "Email", "email", ("lea@uni.test", "sam@uni.test"))]),
    ], ("Funding", [("text", "Grant code", "grant", ("G-77", "G-31"))])),
    "checkout": ("Check out", [
        ("Address", [("text", "Street", "street", ("12 Elm Row", "4 Dock Lane")),
                     ("text", "Town", "town", ("Bath", "Cork", "Turku"))]),
        ("Delivery", [("select", "Speed", "speed", ("Standard", "Express"))]),
        ("Payment", [("text", "Card holder", "holder", ("M. Varga", "J. Ito"))]),
    ], ("Gift", [("text", "Gift message", "gift", ("Happy birthday", "Well done"))])),
}  # fmt: skip
_NEXT = ("Next", "Continue", "Save and continue")
_FINISH = ("Finish", "Submit", "Done")
_SIGNIN = ("Sign in", "Log in")
_USERS = ("ada", "bo.k", "cyrus", "dana_v", "eli")


class SigninWizard(TemplateBase):
    """Sign in, then a wizard (family `AXES`); twists: carry a number, an extra step, a new password."""

    name = "web_automation.signin_wizard"
    cluster = "web_automation"

    def build_starter(self, rng: random.Random) -> Parts:
        """See `TemplateBase.build_starter`."""
        return starters.signin_wizard(rng)

    def build(self, level: int, rng: random.Random) -> Parts:
        """See `TemplateBase.build`."""
        tags = variant(rng, *AXES)
        wizard = pick(tags, WIZARDS)
        nav = pick(tags, NAVS)
        style = pick(tags, LOCATE)
        title, all_steps, extra = _WIZARDS[wizard]
        chosen = all_steps[:2] if level == 0 else all_steps[:3]
        steps: list[tuple[str, list[tuple[Field, str]]]] = [
            (name, [self._field(rng, spec, style) for spec in specs]) for name, specs in chosen
        ]
        carry_field = carry_id = carry_value = None
        if level >= 1:
            carry_id = f"num-{token(rng, 3)}"
            carry_value = f"{rng.choice('KQZ')}-{rng.randrange(1000, 9999)}"
            carry_field = make_field(rng, "text", "Reference", "reference", style, (), "Reference")
            steps[-1][1].append((carry_field, carry_value))
        if level >= 2:
            steps.insert(1, (extra[0], [self._field(rng, spec, style) for spec in extra[1]]))
        user, password = rng.choice(_USERS), f"pw-{token(rng, 5)}"
        new_password = f"pw-{token(rng, 5)}" if level >= 3 else password
        login = [
            make_field(rng, "text", "User name", "user", style, (), "user name"),
            make_field(rng, "password", "Password", "password", style, (), "password"),
        ]
        signin, next_text, finish = rng.choice(_SIGNIN), rng.choice(_NEXT), rng.choice(_FINISH)
        prefix = rng.choice(("/wizard", "/apply", "/flow", "/steps"))
        site, paths = self._site(
            title, steps, nav, style, login, (user, new_password), password, signin,
            next_text, finish, prefix, carry_id, carry_value,
        )  # fmt: skip
        ref = self._program(steps, style, login, (user, password, new_password), signin,
                            next_text, finish, carry_field, carry_id, level)  # fmt: skip
        wrong = self._program(steps, style, login, (user, password, new_password), signin,
                              next_text, finish, carry_field, carry_id, level, near=True)  # fmt: skip
        sent = [{"path": "/signin", "fields": {login[0].name: user, login[1].name: password}}]
        if level >= 3:
            sent.append(
                {"path": "/signin", "fields": {login[0].name: user, login[1].name: new_password}}
            )
        for path, (_name, fields) in zip(paths, steps, strict=True):
            sent.append({"path": path, "fields": {f.name: posted_value(f, v) for f, v in fields}})
        listing = "\n".join(
            f"{i}. {q(name)}: "
            + "; ".join(
                f"{handle_text(f, style)}: {q(v)}"
                for f, v in fields
                if f is not carry_field and (level < 2 or i != 2)
            )
            for i, (name, fields) in enumerate(steps, start=1)
        ).replace(": \n", ": see the extra rules\n")
        rules = [
            f"The first step's page shows a reference number in the element with id "
            f"`{carry_id}`; enter it in the last step's field, "
            f"{handle_text(carry_field, style) if carry_field else ''}.",
            f"The site adds step 2, {q(extra[0])}, which is not listed above: "
            + "; ".join(f"{handle_text(f, style)}: {q(v)}" for f, v in steps[1][1])
            + ".",
            "The password above has expired: signing in with it brings back the sign-in "
            "page, which shows the new password in the element with id `new-password`; sign "
            "in again with that one.",
        ]
        if level < 2:
            rules[1] = f"The site adds a step {q(extra[0])}."
        how = (
            "each step's page"
            if nav == "server"
            else "the page (its script shows one step at a time)"
        )
        task = (
            f"Sign in as `{user}` with the password `{password}`, then complete the wizard "
            f"{q(title)}, once, step by step."
        )
        page_text = (
            f"the sign-in form: {handle_text(login[0], style)} and {handle_text(login[1], style)}, "
            f"and the button {q(signin)}. Then {how}: fill the step's fields and click "
            f"{q(next_text)} ({q(finish)} on the last step). The steps:\n{listing}"
        )
        output = "nothing to print: the site records each step as it is sent."
        return Parts(
            prompt=web_prompt(task, page_text, output, rules, level),
            setup_script=site_setup(site),
            validation_script=web_validator(_BODY, {"posts": sent}),
            reference_solution=ref,
            wrong_solution=wrong,
        )

    @staticmethod
    def _field(rng: random.Random, spec: _Spec, style: str) -> tuple[Field, str]:
        kind, label, handle, values = spec
        options = values if kind == "select" else ()
        return make_field(rng, kind, label, handle, style, options, label), rng.choice(values)

    @staticmethod
    def _program(
        steps: list[tuple[str, list[tuple[Field, str]]]],
        style: str,
        login: list[Field],
        secrets: tuple[str, str, str],
        signin: str,
        next_text: str,
        finish: str,
        carry_field: Field | None,
        carry_id: str | None,
        level: int,
        *,
        near: bool = False,
    ) -> str:
        """The reference program (or, `near`, the near-miss: the newest twist left out)."""
        user, password, _new_password = secrets
        button = "page.get_by_role('button', name={!r}, exact=True).click()"
        lines = [
            fill_step(login[0], style, user),
            fill_step(login[1], style, password),
            button.format(signin),
        ]
        if level >= 3 and not near:
            lines += [
                "new_password = page.inner_text('#new-password').strip()",
                fill_step(login[0], style, user),
                fill_var(login[1], style, "new_password"),
                button.format(signin),
            ]
        for index, (_name, fields) in enumerate(steps):
            last = index == len(steps) - 1
            if index == 0 and carry_id is not None and not (near and level == 1):
                lines.append(f"carried = page.inner_text({'#' + carry_id!r}).strip()")
            if near and level == 2 and index == 1:
                continue  # the extra step is not known to the near-miss
            for field, value in fields:
                if field is carry_field:
                    if not (near and level == 1):
                        lines.append(fill_var(field, style, "carried"))
                    continue
                lines.append(fill_step(field, style, value))
            if near and level == 0 and last:
                return program(lines)  # the basic near-miss never sends the last step
            lines.append(button.format(finish if last else next_text))
        lines.append("page.wait_for_selector('#done')")
        return program(lines)

    @staticmethod
    def _site(
        title: str,
        steps: list[tuple[str, list[tuple[Field, str]]]],
        nav: str,
        style: str,
        login: list[Field],
        account: tuple[str, str],
        old_password: str,
        signin: str,
        next_text: str,
        finish: str,
        prefix: str,
        carry_id: str | None,
        carry_value: str | None,
    ) -> tuple[Site, list[str]]:
        """The site and the path each step posts to."""
        user, password = account
        form = (
            f"<form method='post' action='/signin'>{field_html(login[0], style)}"
            f"{field_html(login[1], style)}<p><button type='submit'>{signin}</button></p></form>"
        )
        notice = (
            f"<p>Password expired. Your new password is <b id='new-password'>{password}</b></p>"
        )
        pages = {
            "/": html_page("Sign in", f"<h1>Sign in</h1>{form}"),
            "/?failed=1": html_page(
                "Sign in",
                f"<h1>Sign in</h1>{notice if old_password != password else '<p>Wrong password.</p>'}"
                f"{form}",
            ),
        }
        done = html_page("Done", f"<h1 id='done'>{title}: all done</h1>")
        carry = f"<p>Your reference number: <b id='{carry_id}'>{carry_value}</b></p>"
        paths = [f"{prefix}/{token_path(i)}" for i in range(len(steps))]
        posts: dict[str, str] = {}
        sections = []
        for index, (name, fields) in enumerate(steps):
            last = index == len(steps) - 1
            label = finish if last else next_text
            rows = "".join(field_html(f, style) for f, _v in fields)
            shown = carry if index == 0 and carry_id else ""
            if nav == "server":
                page = (
                    f"<h1>{title}</h1><h2>Step {index + 1}: {name}</h2>{shown}"
                    f"<form method='post' action='{paths[index]}'>{rows}"
                    f"<p><button type='submit'>{label}</button></p></form>"
                )
                pages[f"{prefix}/page-{index + 1}"] = html_page(name, page)
                posts[paths[index]] = f"{prefix}/page-{index + 2}" if not last else "/done"
            else:
                hidden = "" if index == 0 else " class='hidden'"
                sections.append(
                    f"<section id='s{index}'{hidden}><h2>Step {index + 1}: {name}</h2>{shown}"
                    f"<form data-post='{paths[index]}'>{rows}<p><button type='submit'>{label}"
                    "</button></p></form></section>"
                )
                posts[paths[index]] = "/saved"
        if nav == "client":
            script = (
                "document.querySelectorAll('form[data-post]').forEach((form, i, all) => {\n"
                "  form.addEventListener('submit', async e => {\n"
                "    e.preventDefault();\n"
                "    await fetch(form.dataset.post, {method: 'POST', credentials: 'same-origin',\n"
                "      body: new URLSearchParams(new FormData(form))});\n"
                "    form.parentElement.classList.add('hidden');\n"
                "    if (i + 1 < all.length) all[i + 1].parentElement.classList.remove('hidden');\n"
                "    else document.getElementById('end').classList.remove('hidden');\n"
                "  });\n});"
            )
            body = (
                f"<h1>{title}</h1>{''.join(sections)}"
                f"<h2 id='end' class='hidden'><span id='done'>All done</span></h2>"
            )
            pages[f"{prefix}/page-1"] = html_page(title, body, script)
            pages["/saved"] = "saved"
        pages["/done"] = done
        site = Site(
            pages=pages,
            posts=posts,
            logins={
                "/signin": Login(
                    {login[0].name: user, login[1].name: password}, f"{prefix}/page-1", "/?failed=1"
                )
            },
            guarded=(*paths, *(p for p in pages if p.startswith(prefix)), "/done", "/saved"),
        )
        return site, paths


def token_path(index: int) -> str:
    """The path segment that step `index` (from 0) posts to."""
    return f"step-{index + 1}"


_BODY = """
run_web_solution(SOLUTION)
record = site_record()
sent = posts(record)
expected = DATA["posts"]
if len(sent) != len(expected):
    fail(f"expected {len(expected)} form posts (sign-in, then each step once, in order); the "
         f"site saw {len(sent)}:\\n" + describe_hits(sent))
for index, (hit, want) in enumerate(zip(sent, expected)):
    what = f"post {index + 1} ({want['path']})"
    if hit["path"] != want["path"]:
        fail(f"post {index + 1} went to {hit['path']}, expected {want['path']}:\\n"
             + describe_hits(sent))
    if index and want["path"] != "/signin" and not hit["authed"]:
        fail(f"{what} came without the sign-in cookie")
    check_fields(hit, want["fields"], what)
passed()
"""
