"""What a run keeps beside its execution state: progress.json, the training code's own record."""
