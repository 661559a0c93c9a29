"""The bounds chapter's tables (topolip.evidence.bound_tables): the join of bounds and TopoLip
rows, the
slack of the per-layer and chained bounds, the looseness per kind of segment."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from topolip.evidence.bound_tables import (
    bound_looseness,
    bound_slack,
    bounds_vs_measured,
    chain_growth,
)
from topolip.schema import LOCAL

NAN = math.nan


def _tables():
    """Two architectures, one seed, one paired perturbation, three probes (input, a, b)."""
    bounds, measured = [], []
    for arch, lips, eps, bottleneck in (("vit", [2.0, 3.0], [0.1, 0.15, 0.3],
                                         [0.04, 0.1, 0.2]),
                                        ("resnet", [4.0, 1.0], [0.1, 0.2, 0.2],
                                         [0.05, 0.3, 0.1])):
        chained = [1.0, lips[0], lips[0] * lips[1]]
        for depth, layer in enumerate(["input", "a", "b"]):
            bound = NAN if depth == 0 else lips[depth - 1]
            common = {"arch": arch, "seed": 0, "layer": layer, "depth": depth,
                      "segment": "" if depth == 0 else "Linear", "bound": bound,
                      "chained_bound": chained[depth]}
            bounds.append({**common, "perturbation": LOCAL, "estimate": bound / 2,
                           "ratio": 2.0 if depth else NAN})
            bounds.append({**common, "perturbation": "fgsm", "estimate": NAN, "ratio": NAN,
                           "eps": eps[depth], "envelope_chain": 2 * chained[depth] * 0.1})
            measured.append({"arch": arch, "seed": 0, "perturbation": "fgsm", "layer": layer,
                             "depth": depth, "eps": eps[depth], "bottleneck": bottleneck[depth],
                             "envelope": 2 * eps[depth]})
    return pd.DataFrame(bounds), pd.DataFrame(measured)


def test_join_puts_the_measured_growth_next_to_twice_the_bound():
    bounds, measured = _tables()
    joined = bounds_vs_measured(bounds, measured)
    assert len(joined) == 6 and (joined["perturbation"] == "fgsm").all()
    # sorted by arch, then depth; ratio = W_inf,inf,l / eps_{l-1}
    assert joined["arch"].tolist() == ["resnet"] * 3 + ["vit"] * 3
    vit = joined[joined["arch"] == "vit"]
    assert math.isnan(vit["ratio"].iloc[0])
    assert vit["ratio"].iloc[1:].tolist() == pytest.approx([0.1 / 0.1, 0.2 / 0.15])
    assert vit["two_lip"].iloc[1:].tolist() == [4.0, 6.0]
    assert "eps_measured" in joined and "bottleneck" in joined
    slack = bound_slack(joined)
    assert len(slack) == 4
    assert slack.min() >= 1
    # resnet: 8 / 3 and 2 / 0.5; vit: 4 / 1 and 6 / (0.2 / 0.15)
    assert sorted(slack) == pytest.approx([8 / 3, 4.0, 4.0, 4.5])
    growth = chain_growth(joined)
    assert list(growth.index) == ["resnet", "vit"]
    assert growth.loc["vit"].tolist() == pytest.approx([6.0, 3.0, 2.0])
    assert growth.loc["resnet"].tolist() == pytest.approx([4.0, 2.0, 2.0])


def test_join_rejects_tables_that_do_not_match():
    bounds, measured = _tables()
    with pytest.raises(ValueError, match="only 5 of the 6 chain rows"):
        bounds_vs_measured(bounds, measured.iloc[1:])
    with pytest.raises(ValueError, match="one row per"):
        bounds_vs_measured(bounds, pd.concat([measured, measured.iloc[:1]]))
    other = measured.assign(eps=measured["eps"] * 1.1)
    with pytest.raises(ValueError, match="not those of the TopoLip table"):
        bounds_vs_measured(bounds, other)
    broken = measured.copy()
    broken.loc[2, "bottleneck"] = 1.0  # above 2 eps
    with pytest.raises(ValueError, match="exceeds its envelope"):
        bounds_vs_measured(bounds, broken)
    with pytest.raises(ValueError, match=r"measured lacks column\(s\) \['bottleneck'\]"):
        bounds_vs_measured(bounds, measured.drop(columns="bottleneck"))


def test_looseness_per_kind_of_segment():
    bounds, _ = _tables()
    bounds.loc[(bounds["perturbation"] == LOCAL) & (bounds["layer"] == "b"),
               "segment"] = "ReLU"
    bounds.loc[(bounds["perturbation"] == LOCAL) & (bounds["arch"] == "vit")
               & (bounds["layer"] == "a"), "ratio"] = 5.0
    t = bound_looseness(bounds)
    assert list(t.columns) == ["segment", "archs", "layers", "max_ratio", "median_ratio",
                               "max_bound"]
    assert t["segment"].tolist() == ["ReLU", "Linear"]  # by increasing max_ratio
    linear = t.iloc[1]
    assert linear["archs"] == "ResNet, ViT" and linear["layers"] == 1
    assert (linear["max_ratio"], linear["median_ratio"], linear["max_bound"]) == (5.0, 3.5, 4.0)
    bad = bounds.copy()
    bad.loc[(bad["perturbation"] == LOCAL) & (bad["depth"] == 1), "estimate"] = 100.0
    with pytest.raises(ValueError, match="estimate exceeds its bound"):
        bound_looseness(bad)
