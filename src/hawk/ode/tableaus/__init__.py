"""The explicit methods' coefficients, one ``ButcherTableau`` a file, with their sources: data
only (``hawk.ode.explicit`` makes the step and the interpolant; ``hawk.ode.methods`` registers
each under its name)."""

from .dop853 import DOP853
from .dopri5 import DOPRI5
from .rk23 import RK23
from .tsit5 import TSIT5
from .vern7 import VERN7
from .vern9 import VERN9

__all__ = ["DOPRI5", "TSIT5", "VERN7", "VERN9", "RK23", "DOP853"]
