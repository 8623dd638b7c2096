"""Published measurements and their predictions: case files read, evaluated and fitted.

A case (case.py), one module per kind (static, levers, all_at_t0, disagg, serving), the dispatch
(evaluate.py), the case and benchmark file readers and the fit to a user's benchmark files."""
