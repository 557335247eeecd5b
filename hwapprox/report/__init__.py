"""Rendering: what the command line writes for people to read (text, Markdown, HTML,
plots). The library packages compute results and never import this package
(``tests/test_architecture.py``); the command line (:mod:`hwapprox.cli`) and the main job
(:mod:`hwapprox.demo`) call it.

* :mod:`.validate` -- ``hwapprox validate``'s text report, ``validate.json``, the plot
  and the output directory (``-o``);
* :mod:`.html` -- the self-contained HTML pages of validate and of the demo;
* :mod:`.markdown` -- the demo's ``summary.md``;
* :mod:`.plots` -- the sweep's Pareto plots.
"""
