"""The phases of a build, one module per kind, each with one entry function returning `Phase`s:
compile (configure, compile, install), pgo (train, merge, profile check around a compile),
bolt (instrument, train, merge, optimize) and smoke (start, query, stop)."""
