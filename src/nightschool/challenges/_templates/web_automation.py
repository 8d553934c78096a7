"""Cluster `web_automation`: drive a local site with Playwright (forms, tables, a sign-in wizard).

Each template lives in its own module (`web_form`, `web_table`,
`web_wizard`), its starter tier in
`starters.web_automation`; every seed draws its task from the template's
family (see `_kit.variant`). Solutions are Python programs using Playwright's
sync API; they run in the sandbox and reach a real Chromium on the host through
the browser bridge (`challenges._webrun`), which serves the site the setup
wrote on 127.0.0.1 and records what it was sent.
"""

from __future__ import annotations

from nightschool.challenges._templates.web_form import FormFill
from nightschool.challenges._templates.web_table import TableScan
from nightschool.challenges._templates.web_wizard import SigninWizard

TEMPLATES = (FormFill(), SigninWizard(), TableScan())
"""The cluster's templates."""

__all__ = ["TEMPLATES", "FormFill", "SigninWizard", "TableScan"]
