"""A tiny PyTorch training script that survives spot interruptions with `spotline.training.checkpoint`.

A small MLP learns a fixed function of 4 inputs from synthetic data, on CPU, in a few seconds. It
follows the SageMaker container layout, so the same script runs in a training job and locally:

    hyperparameters  /opt/ml/input/config/hyperparameters.json  ($SM_INPUT_CONFIG_DIR; $SM_HP_<NAME>; --flags)
    checkpoints      /opt/ml/checkpoints                        ($SPOTLINE_CHECKPOINT_DIR; --checkpoint-dir)
    final model      /opt/ml/model/model.pt                     ($SM_MODEL_DIR; --model-dir)

Resumption is exact: a run interrupted (SIGTERM, or SIGKILL after a periodic checkpoint) and started
again ends with bit-identical weights to an uninterrupted run, because the checkpoint holds the model,
the optimizer, the LR scheduler and the global RNG state (dropout draws from it), and each step's
batch comes from a generator seeded with the step number, so the data does not depend on where the
run resumed. Prints JSON lines on stdout: {"event": "start"}, {"event": "stopped"} on SIGTERM,
{"event": "done", "finalLoss", "weightsSha256"} at the end; the helper logs its saves on stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

# torch works without numpy (which this example does not need) but warns on import that it is absent
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from spotline.training.checkpoint import Checkpointer  # noqa: E402 (PYTHONPATH=layers/spotline; standard library only)

# name: (type, default). Values in hyperparameters.json and $SM_HP_* are strings, as SageMaker writes them.
HYPERPARAMETERS: dict[str, tuple[type, Any]] = {
    "total_steps": (int, 2000),
    "batch_size": (int, 32),
    "hidden": (int, 32),
    "learning_rate": (float, 0.01),
    "seed": (int, 7),
    "step_sleep": (float, 0.0),  # seconds of real time per step, so a test can interrupt mid-way
    "interval_seconds": (float, None),  # None: the helper's ($SPOTLINE_CHECKPOINT_INTERVAL_MINUTES, else 15 min)
}
INPUTS = 4


def hyperparameters(argv: list[str] | None) -> tuple[dict[str, Any], argparse.Namespace]:
    """Defaults < hyperparameters.json < $SM_HP_<NAME> < command-line flags."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in HYPERPARAMETERS:
        parser.add_argument("--" + name.replace("_", "-"), dest=name, default=None)
    parser.add_argument("--config-dir", default=os.environ.get("SM_INPUT_CONFIG_DIR", "/opt/ml/input/config"))
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "/opt/ml/model"))
    parser.add_argument("--checkpoint-dir", default=None, help="default: $SPOTLINE_CHECKPOINT_DIR, /opt/ml/checkpoints")
    args = parser.parse_args(argv)

    given: dict[str, Any] = {}
    config = Path(args.config_dir) / "hyperparameters.json"
    if config.is_file():
        given.update({key.replace("-", "_"): value for key, value in json.loads(config.read_text()).items()})
    for name in HYPERPARAMETERS:
        if f"SM_HP_{name.upper()}" in os.environ:
            given[name] = os.environ[f"SM_HP_{name.upper()}"]
        if getattr(args, name) is not None:
            given[name] = getattr(args, name)
    unknown = sorted(name for name in set(given) - set(HYPERPARAMETERS) if not name.startswith("sagemaker_"))
    if unknown:  # not fatal: the SDK and launchers add their own (sagemaker_program, ...)
        logging.getLogger("train_tiny").warning("ignoring unknown hyperparameters: %s", ", ".join(unknown))
    params = {
        name: kind(given[name]) if name in given else default for name, (kind, default) in HYPERPARAMETERS.items()
    }
    return params, args


def target(x: torch.Tensor) -> torch.Tensor:
    """The fixed function the model learns."""
    return (torch.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] - 0.25 * x[:, 3] ** 2).unsqueeze(1)


def batch(seed: int, step: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Step `step`'s batch, from the step number alone (not from how many batches came before)."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + step)
    x = torch.randn(size, INPUTS, generator=generator)
    return x, target(x)


def weights_sha256(model: nn.Module) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        flat = tensor.detach().contiguous().reshape(-1)
        digest.update(f"{name}:{flat.dtype}:{tuple(tensor.shape)}:".encode())
        digest.update(bytes(flat.view(torch.uint8).tolist()))
    return digest.hexdigest()


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    hp, args = hyperparameters(argv)
    total = hp["total_steps"]
    torch.set_num_threads(1)  # bit-identical results do not depend on how work is split over threads
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(hp["seed"])  # the initial weights, and dropout until a checkpoint's RNG state replaces it

    model = nn.Sequential(
        nn.Linear(INPUTS, hp["hidden"]),
        nn.Tanh(),
        nn.Dropout(0.1),
        nn.Linear(hp["hidden"], hp["hidden"]),
        nn.Tanh(),
        nn.Linear(hp["hidden"], 1),
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=hp["learning_rate"])
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total, eta_min=hp["learning_rate"] / 100)

    def snapshot(path: Path) -> None:
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": torch.get_rng_state(),
        }
        torch.save(state, path)

    interval = hp["interval_seconds"]
    ckpt: Checkpointer[dict[str, Any]] = Checkpointer(
        directory=args.checkpoint_dir,
        interval_minutes=None if interval is None else interval / 60,
        total_steps=total,
        save=snapshot,
        load=lambda path: torch.load(path, weights_only=True),
    )
    state, start = ckpt.restore()
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"])
    emit("start", resumedFrom=start, totalSteps=total, checkpointDir=str(ckpt.directory))

    loss_fn = nn.MSELoss()
    model.train()
    for step in range(start, total):
        x, y = batch(hp["seed"], step, hp["batch_size"])
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        if hp["step_sleep"]:
            time.sleep(hp["step_sleep"])
        if ckpt.step_done(step + 1):  # SIGTERM: it has just saved this step
            emit("stopped", step=step + 1, totalSteps=total)
            return 0
    ckpt.save_now(total)  # progress.json: step == totalSteps
    ckpt.close()

    model.eval()
    with torch.no_grad():
        x, y = batch(hp["seed"], -1, 1024)  # held out: step -1 is never a training step
        final_loss = loss_fn(model(x), y).item()
    model_dir = Path(args.model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), model_dir / "model.pt")
    emit("done", resumedFrom=start, totalSteps=total, finalLoss=final_loss, weightsSha256=weights_sha256(model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
