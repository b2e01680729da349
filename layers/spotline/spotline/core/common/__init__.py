"""What every concept shares (pure): errors, durations, names, console links, JSON Schema plumbing."""
