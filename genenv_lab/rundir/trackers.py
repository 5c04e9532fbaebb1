"""Experiment trackers: the loop's per-epoch record logged to TensorBoard, Weights & Biases or Trackio.

``loop.report_to`` (``--loop.report_to tensorboard``) names one of :data:`TRACKERS`; the main process logs every
numeric key of each committed epoch's record (:func:`scalars`: p̂, in band, R_env, the simulator's update
under ``rwr/``, the agent's under ``grpo/``, the held-out score ``eval/...``, the counterfactual
``reference/p_hat``, the consumption ``cumulative/...``, phase times ``phase_s/...``) at step = epoch, so a resumed
run continues its curves. TRL's own ``report_to`` stays ``none``: the agent's trainer is built afresh each epoch, so
its tracker runs would restart at step 0 every epoch; its metrics reach the tracker through the record instead.

- ``tensorboard``: event files under ``<run>/tensorboard/`` (``tensorboard --logdir runs``); needs the
  ``tensorboard`` package.
- ``wandb``: one W&B run named after the run folder, its files under the run (set ``WANDB_MODE=offline`` without
  a network); needs ``wandb``.
- ``trackio``: Trackio's local, Gradio-based dashboard (``trackio show``); needs ``trackio``.

Thin adapters over each library's own logging call: no library logs a loop record under these names by itself.
"""

from __future__ import annotations

import threading
import importlib.util
import math
from pathlib import Path
from typing import Any, Mapping

from genenv_lab.config.schema import TRACKERS
PACKAGES = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio"}


def scalars(record: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """The finite numbers of a record (an ``EpochRecord.to_dict()``), nested dicts flattened with ``/`` and
    ``extra``'s keys kept as they are; text, booleans, nulls and the epoch itself left out.

    >>> scalars({"epoch": 2, "p_hat_mean": 0.5, "phase_s": {"generate": 1.5}, "extra": {"eval/domain": None,
    ...          "grpo/loss": 0.1, "agent/prefix_path": "shared-prefix"}, "ok": True})
    {'p_hat_mean': 0.5, 'phase_s/generate': 1.5, 'grpo/loss': 0.1}
    """
    out: dict[str, float] = {}
    for key, value in record.items():
        if key == "epoch" and not prefix or isinstance(value, bool):
            continue
        name = f"{prefix}/{key}" if prefix else key
        if isinstance(value, Mapping):
            out.update(scalars(value, "" if key == "extra" and not prefix else name))
        elif isinstance(value, (int, float)) and math.isfinite(value):
            out[name] = float(value)
    return out


class Tracker:
    """One run's connection to a tracker: :meth:`log` an epoch, :meth:`close` at the end."""

    def __init__(self, kind: str, run_dir: Path, config: Mapping[str, Any]):
        if kind == "none":
            raise ValueError(f"tracker {kind!r}: choose one of {TRACKERS[1:]}")
        check_tracker(kind)
        self.kind = kind
        before = set(threading.enumerate())
        try:
            if kind == "tensorboard":
                from torch.utils.tensorboard import SummaryWriter

                self._writer = SummaryWriter(log_dir=str(run_dir / "tensorboard"))
            elif kind == "wandb":
                import wandb

                self._run = wandb.init(project="genenv_lab", name=run_dir.name, dir=str(run_dir),
                                       config=dict(config), resume="allow", id=run_dir.name)
            else:
                import trackio

                self._run = trackio.init(project="genenv_lab", name=run_dir.name, config=dict(config),
                                         resume="allow")
        except ImportError as exc:  # installed but not importable
            raise _missing(kind, f" ({exc})") from None
        self._threads = set(threading.enumerate()) - before
        self._previous_hook = threading.excepthook
        threading.excepthook = self._thread_failed

    def _thread_failed(self, args) -> None:
        """An exception in a thread the tracker started (tensorboard's writer thread, when its folder is deleted)
        stops the tracker like one in :meth:`log`, without a traceback on the run's console; any other thread's
        goes to the hook that was there before."""
        if args.thread in self._threads:
            if self.failed is None:
                self.failed = f"{args.exc_type.__name__}: {args.exc_value}"
            return
        self._previous_hook(args)

    failed: str | None = None
    """Why the tracker stopped (its first error), or ``None``: a tracker never fails the run it logs."""
    _said = False

    def new_failure(self) -> str | None:
        """:attr:`failed` the first time it is asked after the tracker stopped (from :meth:`log` or from one of its
        own threads), ``None`` before and after: the run says it once."""
        if self.failed is None or self._said:
            return None
        self._said = True
        return self.failed

    def log(self, epoch: int, values: Mapping[str, float]) -> None:
        """Log one epoch; the first error (a deleted or read-only folder, a lost connection) stops the tracker and
        is kept in :attr:`failed` for the run's events, the run goes on."""
        if self.failed is None:
            self._guarded(self._log, epoch, values)

    def close(self) -> None:
        if self.failed is None:
            self._guarded(self._close)
        if threading.excepthook == self._thread_failed:
            threading.excepthook = self._previous_hook

    def _guarded(self, fn, *args) -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - any tracker failure: the run's own record is on disk already
            self.failed = f"{type(exc).__name__}: {exc}"

    def _log(self, epoch: int, values: Mapping[str, float]) -> None:
        finite = dict(values)
        if self.kind == "tensorboard":
            for key, value in finite.items():
                self._writer.add_scalar(key, value, global_step=epoch)
            self._writer.flush()
        elif self.kind == "wandb":
            self._run.log(finite, step=epoch)
        else:
            import trackio

            trackio.log(finite, step=epoch)

    def _close(self) -> None:
        if self.kind == "tensorboard":
            self._writer.close()
        elif self.kind == "wandb":
            self._run.finish()
        else:
            import trackio

            trackio.finish()


def check_tracker(kind: str) -> None:
    """Fail in one line, before a run folder exists, when the tracker ``kind`` cannot be used (its package is not
    installed); nothing to check for ``none``."""
    if kind == "none":
        return
    if kind not in TRACKERS:
        raise ValueError(f"tracker {kind!r}: choose one of {TRACKERS[1:]}")
    if importlib.util.find_spec(PACKAGES[kind]) is None:
        raise _missing(kind)


def _missing(kind: str, detail: str = "") -> RuntimeError:
    return RuntimeError(f"--loop.report_to {kind} needs the {PACKAGES[kind]!r} package: pip install "
                        f"{PACKAGES[kind]}{detail}")


def open_tracker(kind: str, run_dir: str | Path, config: Mapping[str, Any]) -> Tracker | None:
    """The tracker ``kind`` names for the run in ``run_dir`` (``None`` for ``none``)."""
    return None if kind == "none" else Tracker(kind, Path(run_dir), config)
