"""One name per metric in ``epochs.jsonl``: the keys runs wrote before 2026-12 and the names they have now, and the
one function every reader of a record calls so that old runs read as new ones. Pure: no I/O.

Until 2026-12 a record held four of the env and agent update's figures twice, at the top level (``env_kl``,
``n_env_steps``, ``env_loss``, ``agent_loss``) and namespaced in ``extra`` (``rwr/kl``, ``rwr/steps``, ``rwr/loss``,
``grpo/loss``), with different empty values (``env_kl`` 0.0 without an update, ``rwr/kl`` NaN); and six measurements
sat in ``extra`` with no namespace. Records are now written with the namespaced names only (docs/run_directory.md,
"Renamed keys")."""

from __future__ import annotations

from typing import Any, Mapping

RENAMED = {
    "env_kl": "rwr/kl",
    "n_env_steps": "rwr/steps",
    "env_loss": "rwr/loss",
    "agent_loss": "grpo/loss",
    "n_fresh": "fresh/tasks",
    "p_hat_gap": "fresh/p_hat_gap",
    "score_errors": "agent/score_errors",
    "p_hat_reference": "reference/p_hat",
    "in_band_frac_reference": "reference/in_band_frac",
    "p_hat_gap_reference": "reference/p_hat_gap",
}
"""Old key → its name since 2026-12. Every new name is a key of the record's ``extra``."""

TOP_LEVEL_OLD = ("env_kl", "n_env_steps", "env_loss", "agent_loss")
"""The old keys that sat at the record's top level (the others sat in ``extra``)."""


def current_names(record: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the epoch ``record`` with every old key of :data:`RENAMED` under its current name in ``extra``.
    Where a record holds both spellings (runs of 2026-11 wrote ``env_kl`` and ``rwr/kl``), the current name's value
    is kept: it is the one a new run writes. A record in current names comes back equal; ``record`` is not changed. A
record whose ``extra`` is not an object comes back as it is.

    >>> old = {"epoch": 1, "env_kl": 0.0, "agent_loss": 0.5, "extra": {"rwr/kl": None, "p_hat_reference": 0.2}}
    >>> current_names(old)
    {'epoch': 1, 'extra': {'rwr/kl': None, 'reference/p_hat': 0.2, 'grpo/loss': 0.5}}
    """
    extra_in = record.get("extra", {})
    if not isinstance(extra_in, dict):  # not a record this module can read (readers take such an extra as {})
        return dict(record)
    if not any(k in record for k in TOP_LEVEL_OLD) and not any(k in extra_in for k in RENAMED):
        return dict(record)
    out = {k: v for k, v in record.items() if k not in TOP_LEVEL_OLD}
    extra = {k: v for k, v in extra_in.items() if k not in RENAMED}
    for old, value in [*extra_in.items(), *((k, record[k]) for k in TOP_LEVEL_OLD if k in record)]:
        if old in RENAMED:
            extra.setdefault(RENAMED[old], value)
    out["extra"] = extra
    return out
