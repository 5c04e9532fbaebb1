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

from genenv_lab.coevolution.session import run
from genenv_lab.rundir.read import read_epochs, read_state, read_table

EPOCHS = 2
PRIMITIVES = ("mkdir", "fsync", "replace")


def _child(cfg, out, crash_at: int, backend_cls) -> None:
    """Run (or resume) in this forked process on ``backend_cls`` (the scripted fake); die at the ``crash_at``-th
    commit primitive (0: never)."""
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
        list(run(cfg, out, resume=True, backend=backend_cls(num_generations=4), progress=False))
    except BaseException:  # noqa: BLE001 - the exit code is the report; the traceback goes to stderr
        import traceback

        traceback.print_exc()
        os._exit(1)
    os._exit(100 + min(count[0], 99))  # how many primitives an uninterrupted run used


def _fork(cfg, out, crash_at: int, backend_cls) -> int:
    pid = os.fork()
    if pid == 0:
        _child(cfg, out, crash_at, backend_cls)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _summary(out):
    tasks = read_table(out, "tasks")
    attempts = read_table(out, "attempts")
    adapters = sorted(p.name for p in (out / "adapters").iterdir())
    leftovers = sorted(p.name for p in out.rglob("*") if p.name.endswith((".tmp", ".partial")))
    return ([r["epoch"] for r in read_epochs(out)], sorted(tasks["task_id"]), len(attempts),
            sorted(zip(tasks["task_id"], tasks["raw"])), adapters, leftovers, read_state(out)["status"])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kill_at_every_commit_step_then_resume(tiny_cfg, tmp_path, scripted_backend):
    cfg = tiny_cfg.replace(curriculum={"k_min": 0.1}, agent={"num_generations": 4},
                           loop={"epochs": EPOCHS}, eval={"every": 0})
    code = _fork(cfg, tmp_path / "reference", 0, scripted_backend)
    assert code > 100, code
    steps = code - 100
    reference = _summary(tmp_path / "reference")
    assert reference[0] == list(range(1, EPOCHS + 1)) and reference[5] == [] and reference[6] == "finished"
    assert steps >= 5 * EPOCHS  # tables, adapters, record and state of every epoch
    for n in range(1, steps + 1):
        out = tmp_path / f"kill-{n:02d}"
        assert _fork(cfg, out, n, scripted_backend) == 137
        assert _fork(cfg, out, 0, scripted_backend) > 100, f"resume after a kill at step {n} failed"
        assert _summary(out) == reference, f"kill at commit step {n}"


def _run_child(cfg, out, backend_cls) -> None:
    try:
        list(run(cfg, out, resume=True, backend=backend_cls(num_generations=4), progress=False))
    except BaseException:  # noqa: BLE001 - the exit code is the report
        import traceback

        traceback.print_exc()
        os._exit(1)
    os._exit(0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_twenty_random_sigkills_then_resume(tiny_cfg, tmp_path, scripted_backend):
    """SIGKILL at random moments (not only at commit steps: mid-write, mid-epoch), resuming after each, 20 times on
    one run: it completes equal to an uninterrupted run, no epoch, task or attempt lost or duplicated."""
    import random
    import signal
    import time

    epochs = 6
    cfg = tiny_cfg.replace(curriculum={"k_min": 0.1}, agent={"num_generations": 4},
                           loop={"epochs": epochs}, eval={"every": 0})
    t0 = time.perf_counter()
    assert _fork(cfg, tmp_path / "reference", 0, scripted_backend) > 100
    duration = time.perf_counter() - t0
    reference = _summary(tmp_path / "reference")
    rng = random.Random(20)
    out, kills = tmp_path / "killed", 0
    while kills < 20:
        pid = os.fork()
        if pid == 0:
            _run_child(cfg, out, scripted_backend)
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
    assert _fork(cfg, out, 0, scripted_backend) > 100
    assert _summary(out) == reference, f"after {kills} random kills"


def _files(out):
    """Every file of a run folder (the lock and the event log aside), name → bytes."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name not in (".writer.lock", "events.log")}


def _finished_run(tiny_cfg, out, backend_cls):
    cfg = tiny_cfg.replace(curriculum={"k_min": 0.1}, agent={"num_generations": 4},
                           loop={"epochs": EPOCHS}, eval={"every": 0})
    list(run(cfg, out, backend=backend_cls(num_generations=4), progress=False))
    return cfg


@pytest.mark.parametrize("damage", ["missing", "fraction", "boolean", "negative", "string", "huge", "list",
                                    "nested", "env_version"])
def test_resume_with_unreadable_state_refuses_and_changes_nothing(tiny_cfg, tmp_path, damage, scripted_backend):
    """A finished run whose state.json is gone or holds a count that is not a whole number of epochs: --resume
    refuses with one line and every committed file stays byte for byte (it used to retrain from scratch, or read
    2.5 as 2 and discard epoch 3 on)."""
    import json

    from genenv_lab.rundir.layout import RunDirError

    out = tmp_path / "run"
    cfg = _finished_run(tiny_cfg, out, scripted_backend)
    state = json.loads((out / "state.json").read_text())
    written = {"fraction": {**state, "last_complete_epoch": 1.5}, "boolean": {**state, "last_complete_epoch": True},
               "negative": {**state, "last_complete_epoch": -1}, "string": {**state, "last_complete_epoch": "2"},
               "huge": {**state, "last_complete_epoch": 10**30}, "list": [state],
               "env_version": {**state, "env_version": 0.5}}
    if damage == "missing":
        (out / "state.json").unlink()
    elif damage == "nested":
        (out / "state.json").write_text("[" * 5000 + "]" * 5000)
    else:
        (out / "state.json").write_text(json.dumps(written[damage]))
    before = _files(out)
    with pytest.raises(RunDirError) as err:
        list(run(cfg, out, resume=True, backend=scripted_backend(num_generations=4), progress=False))
    assert "\n" not in str(err.value) and "state.json" in str(err.value)
    assert _files(out) == before


@pytest.mark.parametrize("wrapped", [False, True])
def test_an_interrupt_leaves_the_run_interrupted_even_when_a_library_wraps_it(tiny_cfg, tmp_path, scripted_backend,
                                                                              wrapped):
    """Ctrl-C (or the lab's Stop) in the middle of an epoch marks the run ``interrupted``, also when it arrived
    inside a library that hands it on wrapped (Python raises a ``RuntimeError`` from a ``KeyboardInterrupt`` met in
    ``__set_name__``; the lab's own test once caught one while peft was importing), and the caller still sees a
    ``KeyboardInterrupt``; the epochs committed before it stay."""
    from genenv_lab.coevolution.session import run
    from genenv_lab.rundir.read import read_epochs, read_state

    class Interrupted(scripted_backend):
        def train_agent(self, trainer, prompts, reward_fn):
            if self.calls["grpo"] == 1:  # the second epoch's update
                if not wrapped:
                    raise KeyboardInterrupt
                try:
                    raise KeyboardInterrupt
                except KeyboardInterrupt as inner:
                    raise RuntimeError("Error calling __set_name__ on 'Field' instance") from inner
            return super().train_agent(trainer, prompts, reward_fn)

    out = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        list(run(tiny_cfg.replace(loop={"epochs": 3}), out, backend=Interrupted(), progress=False))
    assert read_state(out)["status"] == "interrupted"
    assert [r.epoch for r in read_epochs(out)] == [1]


@pytest.mark.parametrize("damage", ["{not json", '{"record": {"epoch": 1}, "global_step": 3}', '[1, 2]',
                                    '{"global_step": 3}'])
def test_a_damaged_staged_epoch_is_refused_in_one_line_and_a_half_written_one_is_dropped(tmp_path, damage):
    """The TRL curriculum's staged epoch (rundir/staging.py) is read back through EpochRecord.from_dict: a damaged
    epoch.json is one RunDirError naming the folder to delete, never a traceback or a wrong commit; a stage cut short
    (``.partial``) is dropped as never staged."""
    from genenv_lab.rundir.layout import STAGED, RunDirError
    from genenv_lab.rundir.staging import staged_step

    (tmp_path / (STAGED + ".partial")).mkdir()
    assert staged_step(tmp_path) is None and not (tmp_path / (STAGED + ".partial")).exists()
    (tmp_path / STAGED).mkdir()
    (tmp_path / STAGED / "epoch.json").write_text(damage)
    with pytest.raises(RunDirError, match=r"is damaged .*delete .*trl_pending to train that epoch again") as info:
        staged_step(tmp_path)
    assert "\n" not in str(info.value)
