"""Benchmarks of the debugger against what others reported: `python -m benchmarks.reported`."""
