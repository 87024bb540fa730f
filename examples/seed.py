"""The spec's main code cell ("What a graph is"), run as a script from the repository root.

The cell's code is unchanged below; only the notebook's helper import path is adapted to the
repository layout (the notebooks find ``docs/_shared/nb_helpers.py`` at ``../../_shared``).
"""

import pathlib
import sys  # noqa: E401

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "docs" / "_shared"))
from nb_helpers import gpu_available, xp_for  # noqa: E402

DEVICE = "gpu" if gpu_available() else "cpu"
xp = xp_for(DEVICE)

import eagle  # noqa: E402
import hawk  # noqa: E402
from hawk import Mutable, Param, Scalar, Terminated  # noqa: E402


@hawk.kernel
def oscillator(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end


n = 1_000_000 if DEVICE == "gpu" else 100_000
omega = xp.linspace(1.0, 3.0, n)
runner = eagle.until_done(eagle.deploy(oscillator), max_steps=10_000,
                          x=xp.ones(n), v=xp.zeros(n), t=xp.zeros(n),
                          omega=omega, t_end=1.0, dt=1e-3)
report = runner.run()
print(f"one runner.run() call -- build (capture) took {report.build_s * 1e3:.2f} ms, "
      f"the kernel fired {report.launches} times while it ran")

# "Try this": a second run() without reset() returns at once.
again = runner.run()
print(f"second run() without reset(): launches == {again.launches}")
print(report)
