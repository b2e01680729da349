"""Scoring jobs on SageMaker Batch Transform (pure): the job, its plan, what a team may score with."""
