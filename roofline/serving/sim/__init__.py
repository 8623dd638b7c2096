"""The serving simulator: scheduler, admission, prefix cache, decoders, step times."""
