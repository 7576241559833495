"""The user's own code: the notebook API, the callback, the script tracer, the hooks."""
