"""Kill the run writer at every commit step, then --resume: every run completes with nothing lost or duplicated.

Each run is a forked child (the scripted fake backend, so a run takes well under a second) that dies like a SIGKILL
(``os._exit``: no cleanup, no finally) just before its N-th commit primitive: every ``os.mkdir`` (run folder,
adapter folder), ``os.fsync`` (a temp file or the epochs.jsonl line) and ``os.replace`` (a temp file becoming the
real one, the adapter folder becoming final). A second child resumes the run; the result must equal an
uninterrupted run's.
"""

from __future__ import annotations

import os

import pytest

from fakes import ScriptedBackend
from genenv_lab.loop import run
from genenv_lab.runlog import read_epochs, read_state, read_table

EPOCHS = 2
PRIMITIVES = ("mkdir", "fsync", "replace")


def _child(cfg, out, crash_at: int) -> None:
    """Run (or resume) in this forked process; die at the ``crash_at``-th commit primitive (0: never)."""
    count = [0]

    def step(fn):
        def wrapped(*args, **kwargs):
            count[0] += 1
            if count[0] == crash_at:
                os._exit(137)
            return fn(*args, **kwargs)
        return wrapped

    for name in PRIMITIVES:
        setattr(os, name, step(getattr(os, name)))
    try:
        list(run(cfg, out, resume=True, backend=ScriptedBackend(num_generations=4), progress=False))
    except BaseException:  # noqa: BLE001 - the exit code is the report; the traceback goes to stderr
        import traceback

        traceback.print_exc()
        os._exit(1)
    os._exit(100 + min(count[0], 99))  # how many primitives an uninterrupted run used


def _fork(cfg, out, crash_at: int) -> int:
    pid = os.fork()
    if pid == 0:
        _child(cfg, out, crash_at)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _summary(out):
    tasks = read_table(out, "tasks")
    attempts = read_table(out, "attempts")
    adapters = sorted(p.name for p in (out / "adapters").iterdir())
    leftovers = sorted(p.name for p in out.rglob("*") if p.name.endswith((".tmp", ".partial")))
    return ([r["epoch"] for r in read_epochs(out)], sorted(tasks["task_id"]), len(attempts),
            sorted(zip(tasks["task_id"], tasks["raw"])), adapters, leftovers, read_state(out)["status"])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kill_at_every_commit_step_then_resume(tiny_cfg, tmp_path):
    cfg = tiny_cfg.replace(curriculum={"k_min": 0.1}, agent={"num_generations": 4},
                           loop={"epochs": EPOCHS, "eval_every": 0})
    code = _fork(cfg, tmp_path / "reference", 0)
    assert code > 100, code
    steps = code - 100
    reference = _summary(tmp_path / "reference")
    assert reference[0] == list(range(1, EPOCHS + 1)) and reference[5] == [] and reference[6] == "finished"
    assert steps >= 5 * EPOCHS  # tables, adapters, record and state of every epoch
    for n in range(1, steps + 1):
        out = tmp_path / f"kill-{n:02d}"
        assert _fork(cfg, out, n) == 137
        assert _fork(cfg, out, 0) > 100, f"resume after a kill at step {n} failed"
        assert _summary(out) == reference, f"kill at commit step {n}"


def _run_child(cfg, out) -> None:
    try:
        list(run(cfg, out, resume=True, backend=ScriptedBackend(num_generations=4), progress=False))
    except BaseException:  # noqa: BLE001 - the exit code is the report
        import traceback

        traceback.print_exc()
        os._exit(1)
    os._exit(0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_twenty_random_sigkills_then_resume(tiny_cfg, tmp_path):
    """SIGKILL at random moments (not only at commit steps: mid-write, mid-epoch), resuming after each, 20 times on
    one run: it completes equal to an uninterrupted run, no epoch, task or attempt lost or duplicated."""
    import random
    import signal
    import time

    epochs = 6
    cfg = tiny_cfg.replace(curriculum={"k_min": 0.1}, agent={"num_generations": 4},
                           loop={"epochs": epochs, "eval_every": 0})
    t0 = time.perf_counter()
    assert _fork(cfg, tmp_path / "reference", 0) > 100
    duration = time.perf_counter() - t0
    reference = _summary(tmp_path / "reference")
    rng = random.Random(20)
    out, kills = tmp_path / "killed", 0
    while kills < 20:
        pid = os.fork()
        if pid == 0:
            _run_child(cfg, out)
        time.sleep(rng.uniform(0.0, duration))
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if code == -signal.SIGKILL:
            kills += 1
        else:
            assert code == 0, f"a resume failed (exit {code}) after {kills} kills"
            if (out / "state.json").is_file() and read_state(out)["status"] == "finished":
                break  # finished before 20 kills landed: start over on a new folder, keep counting
    assert _fork(cfg, out, 0) > 100
    assert _summary(out) == reference, f"after {kills} random kills"
