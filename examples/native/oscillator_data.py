"""Write the seed oscillator's bindings for ``eagle-run-artifact``: DIR/NAME.npy and params.json.

    python examples/native/oscillator_data.py DIR [N]
"""

import json
import sys
from pathlib import Path

import numpy as np

folder = Path(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
folder.mkdir(parents=True, exist_ok=True)
np.save(folder / "omega.npy", np.linspace(1.0, 3.0, n))
np.save(folder / "x.npy", np.ones(n))
np.save(folder / "v.npy", np.zeros(n))
np.save(folder / "t.npy", np.zeros(n))
(folder / "terminated.npy").unlink(missing_ok=True)
(folder / "params.json").write_text(json.dumps({"t_end": 1.0, "dt": 1e-3}) + "\n")
