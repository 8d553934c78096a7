"""Starter renderings of the bank's templates, one module per cluster.

Each function takes the template's seeded `random.Random` and returns the
`Parts` of a function-sized version of the template's basic task (shell
templates: a one-pipeline script with its input shown). The template classes
call them from `build_starter`.

Each prompt's worked example is drawn from the seed (after the hidden cases,
with `_kit.shown_example`), so every seed's prompt is a different task as the
solver sees it, while the function, its signature and the reference body stay
the same for all seeds.
"""
