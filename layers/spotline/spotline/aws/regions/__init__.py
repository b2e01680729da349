"""A run's attempts across regions: resources there, the fleet's record of spot capacity."""
