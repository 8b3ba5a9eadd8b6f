"""``python -m esbridge``: the command line."""

from esbridge.cli import main

main()
