"""Writes ``benchmarks/gri30_isothermal.json``: GRI-Mech 3.0 (53 species, 325 reactions, the
``gri30.yaml`` Cantera ships) as an isothermal mass-action model for ``stiff_gri30`` (issue 42).
Needs Cantera (``pip install cantera``, 3.2 used); the benchmarks read the JSON and need none.

    python benchmarks/gri30_make.py

The model: stoichiometric methane in air at ``T`` = 1500 K and ``P`` = 1 atm, at constant
volume and temperature. Every rate constant is Cantera's at that state and stays fixed: the
forward and reverse constants (``forward_rate_constants``, ``reverse_rate_constants``), for a
three-body reaction times its third-body concentration (``third_body_concentrations``) and for
a falloff reaction with the falloff evaluated (Cantera includes it), both at the start's
composition. So ``[M]`` does not follow the composition, and the model is Cantera's rates of
progress exactly at the start only (checked here to 1e-12) — a mechanism-sized stiff test
problem, not a combustion simulation. The state is the concentrations over the start's total
``C0 = P / (R T)`` (mole fractions at the start); a reaction of reactant order ``n`` gets its
constant times ``C0**(n - 1)`` so that ``x' = sum_j nu_j (kf_j prod x^a - kr_j prod x^b)``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "gri30_isothermal.json"
T, P = 1500.0, 101325.0
START = "CH4:1, O2:2, N2:7.52"
#: the reaction a member's parameter scales (forward and reverse alike)
SCALED = "H + O2 <=> O + OH"


def main() -> None:
    import cantera as ct

    gas = ct.Solution("gri30.yaml")
    gas.TPX = T, P, START
    c = gas.concentrations
    c0 = float(c.sum())
    kf, kr = gas.forward_rate_constants, gas.reverse_rate_constants
    third = np.nan_to_num(gas.third_body_concentrations, nan=1.0)
    reactant, product = gas.reactant_stoich_coeffs, gas.product_stoich_coeffs
    reactions = []
    for j, r in enumerate(gas.reactions()):
        m = third[j] if r.reaction_type == "three-body-Arrhenius" else 1.0
        a = {int(k): int(v) for k, v in enumerate(reactant[:, j]) if v}
        b = {int(k): int(v) for k, v in enumerate(product[:, j]) if v}
        assert all(float(v).is_integer() for v in reactant[:, j]) and not r.orders
        forward = kf[j] * m * c0 ** (sum(a.values()) - 1)
        reverse = kr[j] * m * c0 ** (sum(b.values()) - 1) if r.reversible else 0.0
        reactions.append(dict(equation=r.equation, kf=float(forward), kr=float(reverse),
                              reactants=a, products=b))
        rate = forward * np.prod([(c[k] / c0) ** v for k, v in a.items()]) - reverse * np.prod(
            [(c[k] / c0) ** v for k, v in b.items()])
        cantera_rate = gas.net_rates_of_progress[j] / c0
        assert abs(rate - cantera_rate) <= 1e-12 * max(abs(cantera_rate), 1e-300) + 1e-300, j
    data = dict(source="gri30.yaml (Cantera 3.2)", T=T, P=P, start=START, C0=c0,
                species=gas.species_names, x0=[float(x) for x in c / c0],
                scaled=[r["equation"] for r in reactions].index(SCALED), reactions=reactions)
    lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in data.items() if k != "reactions"]
    rows = ",\n  ".join(json.dumps(r) for r in reactions)
    OUT.write_text("{\n" + ",\n".join(lines) + f',\n"reactions": [\n  {rows}]\n}}\n')
    print(f"wrote {OUT}: {gas.n_species} species, {len(reactions)} reactions")


if __name__ == "__main__":
    main()
