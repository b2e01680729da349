"""The capacity decision (pure): deadline policy, queue, plans, speeds, the lifecycle's next step."""
