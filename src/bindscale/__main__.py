from bindscale.cli import entry

entry()
