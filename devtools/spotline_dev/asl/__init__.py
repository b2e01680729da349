"""The state machine files (statemachines/*.asl.json), built from Python:

- `builder`: the states and the workflow, each writing its own ASL;
- `profiles`: the Retry and Catch profiles, named once;
- `sections`: the keys each section of the execution state keeps (the Tasks' ResultSelectors);
- `lifecycle`, `scoring`: one module per state machine;
- `build`: writes the files (`make asl`), or checks that the committed ones are a fresh build.
"""
