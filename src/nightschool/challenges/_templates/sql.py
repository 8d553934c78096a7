"""Cluster `sql`: sqlite3 queries (joins, GROUP BY, window functions) on a setup-built database.

Each template lives in its own module (`sql_customer_totals`, `sql_top_product`,
`sql_running_balance`; starters in `starters.sql`) and draws every seed's task
from a family of different queries (`_kit.variant`), see `sql_common`.
"""

from __future__ import annotations

from nightschool.challenges._templates.sql_customer_totals import CustomerTotals
from nightschool.challenges._templates.sql_running_balance import RunningBalance
from nightschool.challenges._templates.sql_top_product import TopProduct

TEMPLATES = (CustomerTotals(), TopProduct(), RunningBalance())
"""The cluster's templates, in the order the bank lists them."""
