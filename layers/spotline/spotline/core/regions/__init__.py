"""Where an attempt runs across regions (pure): spot sightings, the region choice, a team's replicas."""
