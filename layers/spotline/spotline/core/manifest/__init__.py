"""What comes in (pure): a manifest loaded, validated and advised on, and the events that bring one."""
