"""The checks of the four stages, one module a check under `diagnostics.checks.<stage>`: its measurement, its
conditions with the sentences they say, its evidence and the causes it owns. Each stage package collects its checks'
`CHECK` objects and declares its units; `diagnostics.walk.registry` collects the stages."""
