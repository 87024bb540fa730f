"""The step kernel's arguments and the adaptive launch schedule's bounds, shared by the GPU
backend over ``cuda.bindings`` (``backend``), the native layer's loop (``_native``) and
``LoadedVector``: one definition of the argument layout ``Program.slots`` gives."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hawk.ir import Role, Slot, series_field, uniform_value

from .emit import slot_ctype
from .memory import DeviceBuffer

if TYPE_CHECKING:
    from ..bindings import Bound

__all__ = ["INITIAL_STEPS_PER_LAUNCH", "MAX_STEPS_PER_LAUNCH", "step_arguments"]

#: The adaptive schedule's first launch size: short, so a run whose samples all finish within
#: a few steps wastes nothing; it doubles from there (the spec's oscillator, 1000 steps on a
#: full device, takes 6 launches: 16, 32, ..., 512).
INITIAL_STEPS_PER_LAUNCH = 16
#: The size it grows to at most: on a full device a launch of 1024 steps is hundreds of
#: microseconds of work against a few microseconds of launch cost, and a WHILE iteration stays
#: short enough for a progress bar.
MAX_STEPS_PER_LAUNCH = 1024


def step_arguments(slots: tuple[Slot, ...], bound: Bound, control: DeviceBuffer,
                   counters: bool = False):
    """The step kernel's argument types and values for ``bound``: the count, the control
    block, the flags, then one value per slot (the layout ``Program.slots`` defines), then for
    a program that reads counters (``Program.counters``) the seed and the first sample's index
    (the step number is the control block's ``steps``)."""
    types, values = ["long long", "ptr", "ptr"], [bound.n, control.ptr, bound.flags.ptr]
    for slot in slots:
        name, component = slot.param.name, slot.component
        if slot.field is not None:  # a Series' row count or row stride (in elements), a
            types.append(slot_ctype(slot))  # Table's size
            values.append(int(series_field(slot, bound.arrays[name])))
        elif slot.is_table:  # the table's data (C-contiguous), read by every thread
            types.append("ptr")
            values.append(bound.arrays[name].ptr)
        elif slot.is_uniform:  # a Param's value, or one component of it
            types.append(slot_ctype(slot))
            values.append(uniform_value(slot, bound.uniforms[name]).item())
        elif slot.param.role is Role.SERIES:  # (T, n), or a component of (T, k, n)...
            types.append("ptr")
            values.append(bound.arrays[name].offset((0, *slot.param.index(component))))
        else:
            types.append("ptr")
            values.append(bound.arrays[name].offset(slot.param.index(component)))
    if counters:
        types += ["u64", "long long"]
        values += [bound.seed or 0, bound.first_sample]
    return types, values
