"""`python -m roofline`. The cycle collector is paused before the app is imported (see
roofline.cli.startup: run, and resume_gc, which turns it back on when the command starts)."""

import gc

gc.disable()

from roofline.cli.app import main  # noqa: E402

main(gc_paused=True)
