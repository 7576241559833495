"""The checks of the four stages and the units of the walk that run them."""
