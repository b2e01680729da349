"""What a job reads (pure): whether the network reaches the file systems its channels mount."""
