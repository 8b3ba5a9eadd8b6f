"""The demo: a small bundled vault and the queries esbridge demo runs on it."""
