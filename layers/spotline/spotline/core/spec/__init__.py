"""The job a manifest asks for (pure): the normalized JobSpec, the instance type catalog, image references."""
