"""The notebook wing: the ``%%gpukernel`` and ``%gpulab`` magics, widgets, session defaults and run checks.

It sits on top of every other layer and nothing below imports it;
``gpulab.notebook.formatters`` alone is imported by ``import gpulab``.
"""
