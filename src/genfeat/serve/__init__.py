"""Local apps over trained runs: `genfeat serve interactive RUN_DIR` (`serve.interactive`)."""
