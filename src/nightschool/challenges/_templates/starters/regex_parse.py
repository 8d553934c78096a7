"""Starter tier of cluster `regex_parse`: error entries of a log, e-mail addresses, dates.

One module per template (`regex_parse_<template>`); each draws the seed's
task from its family first (`_kit.variant`).
"""

from __future__ import annotations

from nightschool.challenges._templates.starters.regex_parse_dates import dates
from nightschool.challenges._templates.starters.regex_parse_emails import emails
from nightschool.challenges._templates.starters.regex_parse_error_lines import error_lines

__all__ = ["dates", "emails", "error_lines"]
