"""A store whose value is another state parameter's start-of-step value, on every backend.

The emitters keep a sample's state in locals and write each store back into its local in turn;
a store that reads another parameter's loaded value (``a, b = b, a``; ``u_prev = u``; an
accumulated ``total = t`` after ``t += dt``) must still see the value the step started with,
as the reference executor (the definition) does, whichever store comes first. Written once,
run on every device (``backends.TARGETS``).
"""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, reference_run
from hawk import Mutable, Out, Param, Scalar, Terminated, Vec3


@hawk.kernel
def swap(terminated: Terminated, a: Mutable[Scalar], b: Mutable[Scalar], p: Mutable[Vec3],
         q: Mutable[Vec3], n: Mutable[Scalar]):
    a, b = b, a
    p, q = q, p
    n += 1.0
    terminated = n >= 3.0


@hawk.kernel
def keep_previous(dt: Param, terminated: Terminated, u: Mutable[Scalar],
                  u_prev: Mutable[Scalar]):
    u_prev = u
    u = u + dt
    terminated = u >= 1.0


@hawk.kernel(accumulate=True)
def summed(dt: Param, terminated: Terminated, t: Mutable[Scalar], total: Out[Scalar]):
    total = t
    t += dt
    terminated = t >= 1.0


def cases(n: int = 37):
    return {
        "swap": (swap, dict(a=np.zeros(n), b=np.ones(n), p=np.zeros((3, n)),
                            q=np.ones((3, n)), n=np.zeros(n)),
                 dict(a=np.ones(n), b=np.zeros(n), p=np.ones((3, n)), q=np.zeros((3, n)))),
        "keep-previous": (keep_previous, dict(dt=0.25, u=np.zeros(n), u_prev=np.full(n, -1.0)),
                          dict(u=np.ones(n), u_prev=np.full(n, 0.75))),
        "accumulate": (summed, dict(dt=0.25, t=np.zeros(n), total=np.zeros(n)),
                       dict(t=np.ones(n), total=np.full(n, 1.5))),  # 0 + .25 + .5 + .75
    }


@pytest.mark.slow
@pytest.mark.parametrize("steps_per_launch", [1, None])
@pytest.mark.parametrize("case", list(cases()))
def test_stores_read_the_start_of_step_values(target, case, steps_per_launch):  # noqa: F811
    kernel, bindings, by_hand = cases()[case]
    expected, _ = reference_run(kernel, bindings, 50)
    for name, value in by_hand.items():
        np.testing.assert_array_equal(expected[name], value, err_msg=name)
    arrays = target.put(bindings)
    eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=50,
                     steps_per_launch=steps_per_launch, **arrays).run()
    actual = target.get(arrays)
    assert_bitwise_equal({k: actual[k] for k in by_hand}, {k: expected[k] for k in by_hand})
