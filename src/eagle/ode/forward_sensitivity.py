"""``solve(..., sensitivity="p" | "u0")``: what it can serve (``sensitivity_columns``), the
augmented model and start it integrates (``with_sensitivity``: the state and ``S = du/dp`` or
``du/du0`` as one vector, ``hawk.ode.forward_sensitivity``), and the state and the
sensitivities taken apart again afterwards (``split_sensitivity``)."""

from __future__ import annotations

from hawk import ode as hawk_ode
from hawk.ir import MAX_WIDTH

from . import ensemble

__all__ = ["sensitivity_columns", "with_sensitivity", "split_sensitivity"]


def sensitivity_columns(params, sensitivity, states: int, refused: dict) -> int:
    """The sensitivity's columns; ``ValueError`` for a request it cannot serve, naming it."""
    if sensitivity not in ("p", "u0"):
        raise ValueError(f"sensitivity must be 'p', 'u0' or None, got {sensitivity!r}")
    for name, value in refused.items():
        if value is not None:
            raise ValueError(f"sensitivity={sensitivity!r} does not go with {name} yet")
    if params.columns:
        raise ValueError("sensitivity='p' takes p as numbers or a vector (not a matrix), or "
                         f"args of at most {MAX_WIDTH} numbers in all")
    columns = params.width if sensitivity == "p" else states
    width = states + states * columns
    if width > MAX_WIDTH:
        raise ValueError(f"sensitivity={sensitivity!r}: the state and its sensitivities are "
                         f"{states} + {states} x {columns} = {width} components, more than "
                         f"{MAX_WIDTH}")
    return columns


def with_sensitivity(f, u0, xp, n: int, params, sensitivity, states: int, refused: dict):
    """The augmented model, its initial state ``(u0, S(0))`` and the sensitivity's columns."""
    columns = sensitivity_columns(params, sensitivity, states, refused)
    start = ensemble.augmented(u0, xp, n, states, columns, sensitivity)
    return hawk_ode.forward_sensitivity(f, states, columns, sensitivity == "p"), start, columns


def split_sensitivity(u, saved, states: int, columns: int, sensitivity: str, has_saves):
    """The state and the sensitivities out of the augmented arrays: ``(u, saved, fields)``."""
    def split(big, lead):
        state = big[(*lead, slice(0, states))]
        rest = big[(*lead, slice(states, None))]
        sens = rest.reshape(*rest.shape[:-2], columns, states, rest.shape[-1])
        sens = sens.swapaxes(-3, -2)  # (..., k, m, n)
        return (state[(*lead, 0)] if states == 1 else state), sens

    u_state, end = split(u, ())
    saved_state, saved_sens = split(saved, (slice(None),))
    fields = {"du_dp" if sensitivity == "p" else "du_du0": end}
    if has_saves:
        fields["saved_sensitivity"] = saved_sens
    return u_state, saved_state, fields
