"""What a run cost (pure): bills, prices, and how the execution ended (the outcome)."""
