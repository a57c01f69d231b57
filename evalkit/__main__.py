from evalkit.cli import entry

entry()
