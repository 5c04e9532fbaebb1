"""The sentence that ends `genenv-lab run`: where p̂ went against α, and how often the simulator was updated."""

from genenv_lab.cli.run_summary import curriculum_verdict as _verdict
from genenv_lab.core.types import EpochRecord


def _records(p_hats, env_steps):
    return [EpochRecord(i + 1, 1, 1, 1.0, p, 0.5, 0.5, 0.0, 0.5, 1.0, extra={"rwr/steps": s})
            for i, (p, s) in enumerate(zip(p_hats, env_steps))]


def test_toward_alpha_inside_the_band():
    text = _verdict(_records([0.9, 0.8, 0.7, 0.6, 0.55, 0.5], [4, 0, 4, 4, 4, 4]), 0.5, 0.125)
    assert "moved toward α: 0.90 in epoch 1, 0.53 on average over the last 2 epochs, inside the band" in text
    assert "updated (RWR on in-band tasks) in 5 of 6 epochs" in text


def test_away_from_alpha_outside_the_band():
    text = _verdict(_records([0.5, 0.7, 0.9], [0, 0, 0]), 0.5, 0.125)
    assert "moved away from α" in text and "0.90 on average over the last 1 epochs, outside the band" in text
    assert "in 0 of 3 epochs" in text


def test_no_measured_p_hat_says_so():
    assert _verdict(_records([float("nan")], [0]), 0.5, 0.1).startswith("No p̂ was measured")


def test_unexpected_errors_are_one_line_unless_debug(tmp_path, capsys):
    import pytest

    from genenv_lab.cli.commands import main

    out = tmp_path / "a-file"
    out.write_text("not a folder")
    assert main(["run", "--preset", "tiny", "--out", str(out)]) == 1
    err = capsys.readouterr()
    assert "is a file, not a folder" in err.out and "Traceback" not in err.out + err.err
    assert main(["compare", "--presets", "tiny", "--epochs", "1", "--seeds", "1", "--out", str(out)]) in (1, 2)
    err = capsys.readouterr()
    assert "Traceback" not in err.out + err.err and len((err.out + err.err).strip().splitlines()) <= 3
    with pytest.raises(FileExistsError):  # --out names a file; --debug lets mkdir's error through
        main(["--debug", "compare", "--presets", "tiny", "--epochs", "1", "--seeds", "1", "--out", str(out)])


def test_a_refused_resume_of_a_users_folder_leaves_it_as_it_was(tmp_path, capsys):
    """Round 5, P10: ``run --resume --out`` on a folder of the user's files was refused in one line but left a
    ``.writer.lock`` there. The folder is left as it was; a real run's lock stays where it is."""
    from genenv_lab.cli.commands import main
    from genenv_lab.rundir.layout import LOCK

    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    for extra in (["--resume"], []):
        assert main(["run", "--preset", "tiny", "--epochs", "1", "--out", str(user), *extra]) == 1
        printed = capsys.readouterr().out
        assert ("nothing to resume" if extra else "is not empty") in printed and "Traceback" not in printed
        assert sorted(p.name for p in user.iterdir()) == ["notes.txt"], extra
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK).write_text("")  # a run's own lock (a folder killed before its config.json) is not removed
    (run / "notes.txt").write_text("x")
    assert main(["run", "--preset", "tiny", "--epochs", "1", "--out", str(run), "--resume"]) == 1
    assert (run / LOCK).exists()
