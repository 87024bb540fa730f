"""Prepare the native layer's device check on a machine without a GPU (``make
native-device-bundle``), so the device's minutes go to running, not building.

    python scripts/native_device_bundle.py DEST [N]

Writes to ``DEST``: ``test_kernels.ptx`` (``native/tests/test_kernels.cu`` through NVRTC, PTX
ISA 9.0, sm_90), ``gravity.ptx`` + ``.json`` (the spec's fixture), ``oscillator.ptx`` + ``.json``
and ``oscillator-data/`` (the seed oscillator's bindings for ``N`` samples) with
``oscillator-expected/`` (what ``eagle.until_done`` on the CPU backend ends with for them,
max_steps 10000), and host builds of both artifacts (for ``--rehearse`` against the stand-in).
``scripts/native-device-check`` runs the binaries of ``build/native`` on them.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "native"))


def main() -> int:
    from oscillator import oscillator

    import eagle
    from eagle.cuda.artifact import write_artifact
    from eagle.cuda.hostbuild import write_host_build
    from eagle.cuda.nvrtc import OLDEST_PTX_ISA, compile_source, lower_ptx_isa
    from hawk.source import import_file

    dest = Path(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    dest.mkdir(parents=True, exist_ok=True)
    source = (ROOT / "native" / "tests" / "test_kernels.cu").read_text()
    ptx = compile_source(source, "sm_90", target="ptx", name="test_kernels.cu")
    (dest / "test_kernels.ptx").write_bytes(lower_ptx_isa(ptx, OLDEST_PTX_ISA, "sm_90"))
    fixtures = ROOT / "docs" / "guide" / "_fixtures"
    for name in ("gravity.ptx", "gravity.json"):
        shutil.copy(fixtures / name, dest / name)
    write_artifact(oscillator.specialize({}), "ptx", dest / "oscillator.ptx", "sm_90")
    # host builds, for scripts/native-device-check --rehearse against the stand-in
    gravity = import_file(fixtures / "gravity.py", "eagle_gravity_fixture").gravity
    write_host_build(gravity.specialize({}), dest / "gravity.ptx")
    write_host_build(oscillator.specialize({}), dest / "oscillator.ptx")
    arrays = dict(omega=np.linspace(1.0, 3.0, n), x=np.ones(n), v=np.zeros(n), t=np.zeros(n))
    for folder in ("oscillator-data", "oscillator-expected"):
        (dest / folder).mkdir(exist_ok=True)
    for key, value in arrays.items():
        np.save(dest / "oscillator-data" / f"{key}.npy", value)
    (dest / "oscillator-data" / "params.json").write_text('{"t_end": 1.0, "dt": 0.001}\n')
    arrays["terminated"] = np.zeros(n, dtype=bool)
    eagle.until_done(eagle.deploy(oscillator, device="cpu"), max_steps=10_000, t_end=1.0,
                     dt=1e-3, **arrays).run()
    for key, value in arrays.items():
        np.save(dest / "oscillator-expected" / f"{key}.npy", value)
    print(f"native_device_bundle: {dest} ({n} oscillator samples)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
