"""Check's assertions: static and traffic limits, a day's limits, check spec files."""
