"""Model families, one folder each (config.py with presets, model.py with one architecture)."""
