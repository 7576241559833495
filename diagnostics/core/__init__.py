"""The check model: the registry of checks and causes, results and their rules, the runner, the run context, typed
evidence."""
