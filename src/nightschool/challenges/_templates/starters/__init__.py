"""Starter renderings of the bank's templates, one module per cluster.

Each function takes the template's seeded `random.Random` and returns the
`Parts` of a function-sized version of the template's basic task (shell
templates: a one-pipeline script with its input shown). The template classes
call them from `build_starter`.

Each seed first draws its task from the template's family (`_kit.variant`:
what the function computes, its argument shape, its output convention), so a
seed's reference fails other seeds' hidden cases (`challenges.cross_seed`);
the worked example is then drawn from the seed after the hidden cases, with
`_kit.shown_example`.
"""
