"""Research tools: the simulator of spot policies on real spot traces, and the traces."""
