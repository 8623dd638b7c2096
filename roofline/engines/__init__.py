"""One serving engine in one room: memory rule, scheduler defaults, versions, launch lines."""
