"""The stages: generate -> execute -> grade -> score -> summarize -> render.

Each is a plain function of its input artifacts and its slice of the config, returning an
artifact; `evalkit.tasks` wires them into doit and writes the results atomically.
"""
