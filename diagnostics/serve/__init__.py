"""Results shared by configuration across sessions and rooms."""
