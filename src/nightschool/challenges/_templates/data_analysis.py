"""Cluster `data_analysis`: CSV aggregation by group, by month, and over a join.

Each template draws a seed's task from a family (`_kit.variant`): what to
compute, how to group or order it, and the input or output shape. The
templates live in one module each; the checks that data separates a family's
tasks are in `data_analysis_family`.
"""

from __future__ import annotations

from nightschool.challenges._templates.data_analysis_dept import DeptSummary
from nightschool.challenges._templates.data_analysis_monthly import MonthlyTotals
from nightschool.challenges._templates.data_analysis_sales import RegionSales

TEMPLATES = (RegionSales(), MonthlyTotals(), DeptSummary())
"""The cluster's templates, in the bank's order."""

__all__ = ["TEMPLATES", "DeptSummary", "MonthlyTotals", "RegionSales"]
