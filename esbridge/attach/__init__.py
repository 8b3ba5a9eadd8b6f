"""Attached indices: indices esbridge did not create, searched through a field map, read-only by default."""
