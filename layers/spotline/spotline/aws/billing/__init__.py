"""What a run cost on AWS: bills, on-demand prices, and RecordOutcome's metrics, report and alerts."""
