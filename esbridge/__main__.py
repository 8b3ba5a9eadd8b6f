"""``python -m esbridge``: the command line, for when the console script is not on PATH."""

from esbridge.cli import main

main(prog_name="esbridge")
