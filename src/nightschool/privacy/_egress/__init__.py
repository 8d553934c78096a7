"""The egress guard's start-up hook for child processes (see `sitecustomize`).

This directory is what `nightschool.privacy` puts first on a child's
`PYTHONPATH`; keep it free of other modules, since each would become importable
by its bare name in those children.
"""
