"""The backend interface's pure helpers: stop strings and the task alphabet (format-constrained generation)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genenv_lab.backends.base import alphabet_token_ids, cut_at_stop


@given(st.text(max_size=40), st.lists(st.text(min_size=1, max_size=3), max_size=3))
def test_cut_at_stop_is_the_longest_prefix_without_a_stop_string(text, stop):
    cut = cut_at_stop(text, stop)
    assert text.startswith(cut)
    assert not any(s in cut for s in stop)
    if cut != text:  # it ended because a stop string begins right there
        assert any(text[len(cut):].startswith(s) for s in stop)


def test_cut_at_stop_takes_the_earliest_stop_and_ignores_empty_ones():
    assert cut_at_stop(" 7 * 8 = 56\nnext", ("\n", "=")) == " 7 * 8 "
    assert cut_at_stop(" 7 * 8", ("", "=")) == " 7 * 8"
    assert cut_at_stop("abc", ()) == "abc"


class _Vocab:
    """A tokenizer stand-in: id -> text, with an end-of-sequence id."""

    def __init__(self, pieces, eos):
        self.pieces, self.eos_token_id = pieces, eos

    def __len__(self):
        return len(self.pieces)

    def decode(self, ids):
        return "".join(self.pieces[i] for i in ids)


def test_alphabet_keeps_tokens_spelt_with_it_and_the_end_of_sequence():
    vocab = _Vocab([" 7", " *", "12", "the", " =", "</s>", "", "x"], eos=5)
    assert alphabet_token_ids(vocab, "0123456789 *", vocab_size=8) == [0, 1, 2, 5]
    # ids past the tokenizer (a padded embedding) are never allowed
    assert alphabet_token_ids(vocab, "0123456789 *", vocab_size=20) == [0, 1, 2, 5]
    with pytest.raises(ValueError, match="no token"):
        alphabet_token_ids(_Vocab(["ab"], eos=None), "0", vocab_size=1)


def _protocol_methods():
    import inspect

    from genenv_lab.backends.base import Backend

    return {name: inspect.signature(getattr(Backend, name)) for name in dir(Backend)
            if not name.startswith("_") and callable(getattr(Backend, name))}


@pytest.mark.parametrize("where, name", [("fixture", "scripted_backend"), ("fixture", "scripted_counter"),
                                         ("genenv_lab.backends.hf", "HFBackend"),
                                         ("genenv_lab.backends.unsloth_engine", "UnslothBackend")])
def test_the_scripted_fakes_and_the_engines_take_the_backend_protocols_calls(where, name, request):
    """The loop runs on the scripted fake as on a real engine only if the fake answers the same calls: every method
    of :class:`~genenv_lab.backends.base.Backend` is there, and takes the protocol's parameters by the same names
    and kinds (a fake that drifted from the interface would test a loop no engine runs). The fakes are the
    fixtures of tests/conftest.py."""
    import importlib
    import inspect

    from genenv_lab.backends.base import Backend

    cls = request.getfixturevalue(name) if where == "fixture" else getattr(importlib.import_module(where), name)
    for method, wanted in _protocol_methods().items():
        assert hasattr(cls, method), f"{name} lacks {method}"
        have = inspect.signature(getattr(cls, method)).parameters
        for param in list(wanted.parameters.values())[1:]:  # past self
            assert param.name in have, f"{name}.{method} takes no {param.name!r}"
            assert have[param.name].kind == param.kind, f"{name}.{method}: {param.name!r} is {have[param.name].kind}"
            if param.default is not inspect.Parameter.empty:
                assert have[param.name].default is not inspect.Parameter.empty, \
                    f"{name}.{method}: {param.name!r} has no default"
    if where == "fixture":
        assert isinstance(cls(), Backend)
    assert not hasattr(Backend, "grpo_step")  # the interface says what an engine does, not which algorithm


def test_every_trainer_is_a_trainer_and_the_loop_names_no_engine_method_but_its_own():
    """Each role's update goes through one call of genenv_lab.trainers: the loop never calls an engine's training
    method itself (a second trainer then touches the trainer module and the configuration's table only), and the
    RWR update is no engine's method (the engines lend a kit; genenv_lab.trainers.env runs the update)."""
    import inspect

    from genenv_lab.backends.base import AgentTrainer, EnvTrainer
    from genenv_lab.backends.hf import HFBackend
    from genenv_lab.backends.unsloth_engine import UnslothBackend
    from genenv_lab.coevolution import loop
    from genenv_lab.config import preset
    from genenv_lab.trainers.agent import TRAINERS
    from genenv_lab.trainers.env import RWR

    assert all(isinstance(t, AgentTrainer) for t in TRAINERS.values())
    assert isinstance(RWR(preset("tiny").env), EnvTrainer)
    source = inspect.getsource(loop)
    assert "update_agent(backend, cfg," in source and "update_env(backend, cfg," in source
    assert not any(f".{name}(" in source for name in ("train_agent", "train_env", "grpo_step", "rwr_step"))
    for engine in (HFBackend, UnslothBackend):
        assert not any(hasattr(engine, name) for name in ("rwr_step", "env_kl", "_rwr_losses", "_batch"))
