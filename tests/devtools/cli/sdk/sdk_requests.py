"""Prints, as JSON, the CreateTrainingJob request the SageMaker Python SDK builds for each trainer
file named on the command line, or why Spotline refuses it. Run in a process of its own: the SDK
imports pandas, scipy and more, and sets up logging of its own."""

from __future__ import annotations

import json
import sys

from spotline_dev.cli.sdk.request_to_manifest import TrainerNotConvertible
from spotline_dev.cli.sdk.trainer import load_trainer, offline_sdk, training_job_request

results = {}
for reference in sys.argv[1:]:
    try:
        with offline_sdk():
            trainer, inputs = load_trainer(reference)
            request, problems = training_job_request(trainer, inputs)
        results[reference] = {"request": request, "problems": problems}
    except TrainerNotConvertible as exc:
        results[reference] = {"problems": exc.problems}
print(json.dumps(results, default=str))
