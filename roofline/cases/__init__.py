"""Published measurements and their predictions: a case (case.py), one module per kind
(static, levers, all_at_t0, disagg, serving) and the dispatch (evaluate.py)."""
