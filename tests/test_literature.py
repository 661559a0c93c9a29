"""The registry of external claims and its rules (topolip.evidence.literature)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from topolip.evidence import literature as lit

REGISTRY = Path(__file__).resolve().parents[1] / "data" / "literature.yml"


def _growth(slope=1.0, lower_bound=False):
    rows = []
    for seed in (0, 1, 2):
        for r in (1, 2, 4, 8, 16):
            m = (1 + 0.1 * seed) * r ** slope
            rows.append(dict(arch="vit", seed=seed, block=0, R=r, measured=m,
                             bound=0.5 * m if lower_bound and r == 16 else 10 * m * r))
    return pd.DataFrame(rows)


def _castin(slope=0.5, violate=False):
    rows = []
    for head in (0, 1):
        for n in (2, 5, 9, 17, 33, 65):
            m = (1 + head) * n ** slope
            rows.append(dict(arch="vit", seed=0, block=0, head=head, n=n, measured=m,
                             bound_ours=0.9 * m if violate and n == 9 else 3 * m,
                             bound_theirs=5 * m))
    return pd.DataFrame(rows)


def _confidence(top=0.999):
    rows = []
    for arch, relu in (("resnet", True), ("conv_stack", True), ("vit", False)):
        for a in (1, 10, 100, 1000):
            c = 0.9 if a < 1000 else (top if relu else 0.5)
            rows.append(dict(arch=arch, seed=0, alpha=a, relu=relu, confidence=c))
    return pd.DataFrame(rows)


def _radii(robust_share=0.0, eps_max=0.3):
    rows = []
    for arch in ("vit", "resnet"):
        for i in range(100):
            robust = i < robust_share * 100
            rows.append(dict(arch=arch, seed=0, image=i, label=0, method="autoattack",
                             radius=eps_max if robust else 0.05, censored=robust,
                             clean_correct=True, eps_max=eps_max, attacks=1.0))
    return pd.DataFrame(rows)


def _curve(diffs):
    rows = []
    for seed, d in enumerate(diffs):
        for eps, base in ((0.0, 0.99), (0.01, 0.99), (0.02, 0.6), (0.05, 0.01)):
            rows.append(dict(arch="resnet", seed=seed, method="autoattack", eps=eps,
                             robust_accuracy=base, clean_accuracy=0.99))
            rows.append(dict(arch="vit", seed=seed, method="autoattack", eps=eps,
                             robust_accuracy=min(0.99, base + d) if eps == 0.02 else base,
                             clean_accuracy=0.99))
    return pd.DataFrame(rows)


def test_registry_loads_and_every_rule_is_known():
    rows = lit.load_literature(REGISTRY)
    ids = {r["id"] for r in rows}
    assert {"kim-dot-product-not-lipschitz", "castin-sqrt-n", "hein-relu-overconfident",
            "croce-standard-zero", "bai-parity", "shao-vit-more-robust"} <= ids
    assert all(r["rule_fn"] in lit.RULES for r in rows)


@pytest.mark.parametrize("edit, match", [
    (lambda r: r.pop("table"), r"row 'x': missing key 'table'"),
    (lambda r: r.update(rule_fn="nope"), r"row 'x': key 'rule_fn' names an unknown rule"),
    (lambda r: r["source"].pop("arxiv"), r"row 'x': key 'source.arxiv' missing"),
    (lambda r: r.update(params=[1]), r"row 'x': key 'params' must be a mapping"),
    (lambda r: r.update(title=""), r"row 'x': key 'title' must be a non-empty"),
    (lambda r: r.update(rival_of="ghost"), r"row 'x': key 'rival_of' names no row"),
])
def test_bad_rows_name_row_and_key(tmp_path, edit, match):
    row = dict(lit.load_literature(REGISTRY)[0], id="x")
    row["source"] = dict(row["source"])
    edit(row)
    p = tmp_path / "lit.yml"
    p.write_text(yaml.safe_dump({"rows": [row]}))
    with pytest.raises(ValueError, match=match):
        lit.load_literature(p)


def test_no_rows_list(tmp_path):
    p = tmp_path / "lit.yml"
    p.write_text("claims: []\n")
    with pytest.raises(ValueError, match="top-level 'rows:'"):
        lit.load_literature(p)


def test_attention_growth_and_planted_bound_violation():
    ok = lit.rule_attention_growth(_growth(), {})
    assert ok["verdict"] == "consistent" and ok["our_number"] == pytest.approx(1.0)
    bad = lit.rule_attention_growth(_growth(lower_bound=True), {})
    assert bad["verdict"] == "inconsistent" and "bound violation" in bad["reason"]
    flat = lit.rule_attention_growth(_growth(slope=0.0), {})
    assert flat["verdict"] == "inconsistent"


def test_castin_rule():
    ok = lit.rule_castin_worst_case(_castin(), {"max_slope": 0.5})
    assert ok["verdict"] == "consistent" and ok["our_number"] == pytest.approx(0.5)
    assert lit.rule_castin_worst_case(_castin(violate=True), {})["verdict"] == "inconsistent"
    assert lit.rule_castin_worst_case(_castin(slope=1.0), {})["verdict"] == "inconsistent"


def test_confidence_rule_and_edited_table():
    assert lit.rule_confidence_limit(_confidence(), {})["verdict"] == "consistent"
    bad = lit.rule_confidence_limit(_confidence(top=0.8), {"threshold": 0.99})
    assert bad["verdict"] == "inconsistent" and bad["our_number"] == pytest.approx(0.8)
    nc = lit.rule_confidence_limit(_confidence().assign(relu=False), {})
    assert nc["verdict"] == "not comparable" and "ReLU" in nc["reason"]


def test_robust_at_eps():
    p = {"eps": 0.3, "max_accuracy": 0.01}
    assert lit.rule_robust_at_eps(_radii(0.0), p)["verdict"] == "consistent"
    bad = lit.rule_robust_at_eps(_radii(0.05), p)
    assert bad["verdict"] == "inconsistent" and bad["our_number"] == pytest.approx(0.05)
    nc = lit.rule_robust_at_eps(_radii(0.0, eps_max=0.2), p)
    assert nc["verdict"] == "not comparable" and "eps_max" in nc["reason"]
    with pytest.raises(ValueError, match="no rows of method 'fab'"):
        lit.robust_accuracy_from_radii(_radii(), 0.3, "fab")


def test_sign_at_smallest_eps():
    parity = lit.rule_sign_at_smallest_eps(_curve([0.01, -0.01, 0.02, -0.02]),
                                           {"expect": "parity"})
    assert parity["verdict"] == "consistent" and "eps=0.02" in parity["reason"]
    pos = _curve([0.2, 0.25, 0.3])
    assert lit.rule_sign_at_smallest_eps(pos, {"expect": "positive"})["verdict"] == "consistent"
    assert lit.rule_sign_at_smallest_eps(pos, {"expect": "parity"})["verdict"] == "inconsistent"
    floored = _curve([0.0, 0.0]).assign(robust_accuracy=0.99)
    assert lit.rule_sign_at_smallest_eps(floored, {})["verdict"] == "not comparable"


def _tables(conf_top=0.999):
    return {"lit_attention_growth": _growth(), "lit_castin": _castin(),
            "lit_confidence": _confidence(top=conf_top), "radii": _radii(0.0),
            "robust_curve": _curve([0.01, -0.01, 0.02, -0.02])}


def test_evaluate_and_planted_violation_flips_summary():
    rows = [r for r in lit.load_literature(REGISTRY) if r["id"] != "shao-vit-more-robust"]
    v = lit.evaluate_literature(_tables(), rows)
    assert list(v.columns) == ["id", "title", "source", "rule", "our_number", "low", "high",
                               "verdict", "reason", "chapter"]
    assert (v["verdict"] == "consistent").all()
    assert v["source"].str.contains("arXiv:").all()
    assert "none is contradicted" in lit.literature_sentence(v)
    assert "No check failed" in lit.literature_summary(v)
    flipped = lit.evaluate_literature(_tables(conf_top=0.5), rows)
    row = flipped.set_index("id").loc["hein-relu-overconfident"]
    assert row["verdict"] == "inconsistent"
    assert "ReLU networks are confident far from the data" in lit.literature_sentence(flipped)
    assert "Not reproduced" in lit.literature_summary(flipped)


def test_evaluate_errors():
    rows = lit.load_literature(REGISTRY)
    with pytest.raises(KeyError, match="table 'lit_castin' missing"):
        lit.evaluate_literature({k: v for k, v in _tables().items() if k != "lit_castin"},
                                rows)
    with pytest.raises(KeyError, match="unknown rule_fn 'nope'"):
        lit.evaluate_literature(_tables(), [dict(rows[0], rule_fn="nope")])


def test_verdicts_tuple():
    assert lit.VERDICTS == ("consistent", "inconsistent", "not comparable")
    assert np.isnan(lit.rule_confidence_limit(_confidence().assign(relu=False), {})["low"])


def test_castin_worst_case_on_hand_sized_head():
    """n = 2, d = 2: power iteration at the worst-case input against a finite-difference
    Jacobian + SVD (independent of torch.func)."""
    import torch

    from topolip.experiments.literature import castin_worst_case, head_attention, local_lipschitz

    w_q = torch.tensor([[1.0, 0.5], [0.0, 2.0]], dtype=torch.float64)
    w_k = torch.tensor([[1.5, 0.0], [0.3, 1.0]], dtype=torch.float64)
    w_v = torch.tensor([[1.0, -0.2], [0.4, 0.8]], dtype=torch.float64)
    x = castin_worst_case(w_q, w_k, 2.0, 2)
    a = (w_q.T @ w_k).numpy() / np.sqrt(2)
    ev, vec = np.linalg.eig(a)
    u = vec[:, np.argmax(ev.real)].real
    assert np.allclose(np.abs(x[0].numpy() @ u), 2.0) and np.allclose(x[1], x[0] / 2)
    f = head_attention(w_q, w_k, w_v)
    est = local_lipschitz(f, x, steps=50)
    h, z, jac = 1e-6, x.numpy().ravel(), []
    for i in range(z.size):
        e = np.zeros_like(z)
        e[i] = h
        fp = f(torch.as_tensor((z + e).reshape(2, 2))).numpy().ravel()
        fm = f(torch.as_tensor((z - e).reshape(2, 2))).numpy().ravel()
        jac.append((fp - fm) / (2 * h))
    ref = np.linalg.svd(np.array(jac).T, compute_uv=False)[0]
    assert est == pytest.approx(ref, rel=1e-6)
