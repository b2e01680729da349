"""`spotline sandbox`: scenarios (one run, or a fleet of teams) replayed on the local stack, and
the figures they report (a fleet's against plain Batch)."""
