"""Operating a deployed Spotline stack from the command line (`spotline submit`, `runs`,
`status`, `logs`, `cancel`, `teams`), with boto3 and the caller's own AWS credentials.

- `deployment`: finding the stack (its CloudFormation outputs and parameters), the
  AWS session (`--profile`, `--region`) and the errors worth a sentence;
- `runs`: what one execution's latest state says about its run, and the table of runs;
- `submit`: validating, uploading a manifest and following its run to the end;
- `logs`: the CloudWatch logs of a run's training jobs, every attempt;
- `cancel`: stopping a run's execution and its training jobs;
- `teams`, `team_commands`: the team registry read and changed (what each `spotline teams` prints);
- `output`: tables and JSON.
"""
