"""One training job on AWS: its resources checked, its request, submission, service jobs and watch."""
