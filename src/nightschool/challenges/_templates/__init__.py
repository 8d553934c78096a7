"""The template bank, one module per cluster."""

from nightschool.challenges._model import Template
from nightschool.challenges._templates import (
    algo,
    bash,
    concurrency,
    data_analysis,
    python_general,
    regex_parse,
    sql,
    web_automation,
)

ALL_TEMPLATES: tuple[Template, ...] = (
    *algo.TEMPLATES,
    *bash.TEMPLATES,
    *concurrency.TEMPLATES,
    *data_analysis.TEMPLATES,
    *python_general.TEMPLATES,
    *regex_parse.TEMPLATES,
    *sql.TEMPLATES,
    *web_automation.TEMPLATES,
)
"""Every template of the bank."""

__all__ = ["ALL_TEMPLATES"]
