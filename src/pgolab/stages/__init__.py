"""The phases of a build, one module per kind, each with one entry function returning `Phase`s:
compile (configure, compile, install), pgo (train, merge, profile check around a compile),
bolt (instrument, train, merge, optimize) and smoke (start, query, stop).

Each kind is handed a small context of its own (CompileContext, PgoContext, BoltContext,
SmokeContext), built by build.Pipeline; context.py holds the pieces they share (runners, servers
of a stage, a profile's sealed digest). No stage imports the build or sees its pipeline."""
