"""Cluster `regex_parse`: log-line parsing, e-mail extraction, date extraction.

One module per template (`regex_parse_<template>`); each seed draws its task
from the template's family (`_kit.variant`), so seeds are different tasks.
"""

from __future__ import annotations

from nightschool.challenges._templates.regex_parse_dates import Dates
from nightschool.challenges._templates.regex_parse_emails import Emails
from nightschool.challenges._templates.regex_parse_error_lines import ErrorLines

TEMPLATES = (ErrorLines(), Emails(), Dates())
"""The cluster's templates, in the bank's order."""

__all__ = ["TEMPLATES", "Dates", "Emails", "ErrorLines"]
