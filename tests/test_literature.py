"""The registry of external claims and its rules (topolip.evidence.literature)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from topolip.evidence import literature as lit
from topolip.report.literature import literature_sentence, literature_summary

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


def _castin_real(slopes=(0.2, 0.25, 0.3)):
    """Three ViTs (seeds), each with two heads at real tokens growing like n^(slope ± 0.05):
    each model's mean log-log slope is exactly its ``slope``."""
    rows = [dict(arch="vit", seed=k, block=0, head=h, n=n,
                 measured=2.0 * n ** (s + (0.05 if h else -0.05)), n_sets=8)
            for k, s in enumerate(slopes) for h in (0, 1) for n in (2, 5, 9, 17)]
    return pd.DataFrame(rows)


def test_castin_real_tokens_rule_on_planted_slopes():
    ok = lit.rule_castin_real_tokens(_castin_real(), {"max_slope": 0.5})
    assert ok["verdict"] == "consistent" and ok["our_number"] == pytest.approx(0.25)
    # the t-interval of three slopes 0.2, 0.25, 0.3: mean ± t(0.975, 2) · 0.05 / √3
    half = 4.302652729911275 * 0.05 / 3 ** 0.5
    assert (ok["low"], ok["high"]) == pytest.approx((0.25 - half, 0.25 + half))
    assert "the source reports about 0.25 on real data" in ok["reason"]
    assert "over 3 models, 6 heads" in ok["reason"]     # the model is the unit
    one_model = lit.rule_castin_real_tokens(_castin_real()[lambda d: d["seed"] == 0], {})
    assert one_model["verdict"] == "inconsistent"       # no interval from one model
    # an interval reaching the worst case's 1/2 is not below it
    wide = lit.rule_castin_real_tokens(_castin_real((0.1, 0.3, 0.5)), {"max_slope": 0.5})
    assert wide["verdict"] == "inconsistent" and wide["high"] > 0.5
    steep = lit.rule_castin_real_tokens(_castin_real((0.55, 0.6, 0.65)), {})
    assert steep["verdict"] == "inconsistent" and "not below" in steep["reason"]
    one_n = _castin_real()[lambda d: d["n"] == 9]
    assert lit.rule_castin_real_tokens(one_n, {})["verdict"] == "not comparable"


def test_castin_real_table_draws_the_same_tokens_for_every_model():
    import torch
    from torch import nn

    from topolip.bounds.attention import mha_weights
    from topolip.experiments.literature import castin_real_table, head_attention, local_lipschitz

    torch.manual_seed(0)
    blocks = {}
    for k in (0, 1):
        layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, batch_first=True).eval()
        blocks[("vit", k)] = layer
    x = torch.randn(3, 6, 4)
    tokens = {key: {"self_attn": x} for key in blocks}
    t = castin_real_table(blocks, tokens, [2, 4, 6, 9], steps=30, seed=5)
    assert sorted(set(t["n"])) == [2, 4, 6]          # 9 > the 6 tokens of a set: skipped
    assert len(t) == 2 * 2 * 3 and (t["n_sets"] == 3).all()
    # one value by hand: model 1, head 1, n = 4, the median over the three sets of the head's
    # local constant at the drawn tokens (the generator [seed, set, n])
    mha = blocks[("vit", 1)].self_attn
    w = mha_weights(mha)
    sl = slice(2, 4)
    f0 = head_attention(w["w_q"][sl], w["w_k"][sl], w["w_v"][sl])
    wo = w["w_o"][:, sl]
    vals = []
    for j in range(3):
        idx = np.random.default_rng([5, j, 4]).choice(6, 4, replace=False)
        vals.append(local_lipschitz(lambda z: f0(z) @ wo.T, x[j, idx].double(), steps=30))
    got = t[(t["seed"] == 1) & (t["head"] == 1) & (t["n"] == 4)]["measured"].item()
    assert got == pytest.approx(float(np.median(vals)), rel=1e-12)
    with pytest.raises(ValueError, match="token counts must be >= 1"):
        castin_real_table(blocks, tokens, [0, 2])


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


def test_attention_rows_take_the_trained_model_as_their_unit():
    # model 0: three blocks growing like R^1, model 1: one block like R^2, model 2: one like
    # R^1.5. Over blocks the mean would be 1.3; over models it is (1 + 2 + 1.5) / 3 = 1.5,
    # with the t-interval of three values
    rows = [dict(arch="vit", seed=seed, block=b, R=r, measured=r ** s, bound=100 * r ** 3)
            for seed, slopes in ((0, (1.0, 1.0, 1.0)), (1, (2.0,)), (2, (1.5,)))
            for b, s in enumerate(slopes) for r in (1, 2, 4, 8)]
    got = lit.rule_attention_growth(pd.DataFrame(rows), {})
    half = 4.302652729911275 * 0.5 / 3 ** 0.5
    assert got["our_number"] == pytest.approx(1.5)
    assert (got["low"], got["high"]) == pytest.approx((1.5 - half, 1.5 + half))
    assert got["verdict"] == "consistent" and "over 3 models, 5 blocks" in got["reason"]
    # Castin's worst case likewise: heads within a model are averaged first
    heads = [dict(arch="vit", seed=seed, block=0, head=h, n=n, measured=n ** s,
                  bound_ours=100 * n, bound_theirs=np.nan)
             for seed, slopes in ((0, (0.0, 0.0, 0.0)), (1, (0.3,)))
             for h, s in enumerate(slopes) for n in (2, 5, 9)]
    got = lit.rule_castin_worst_case(pd.DataFrame(heads), {})
    half = 12.706204736174698 * (0.3 / 2 ** 0.5) / 2 ** 0.5
    assert got["our_number"] == pytest.approx(0.15)
    assert (got["low"], got["high"]) == pytest.approx((0.15 - half, 0.15 + half))
    assert "over 2 models, 4 heads" in got["reason"]


def test_castin_rule():
    ok = lit.rule_castin_worst_case(_castin(), {"max_slope": 0.5})
    assert ok["verdict"] == "consistent" and ok["our_number"] == pytest.approx(0.5)
    bad = lit.rule_castin_worst_case(_castin(violate=True), {})
    assert bad["verdict"] == "inconsistent" and "min(our, their) bound" in bad["reason"]
    assert lit.rule_castin_worst_case(_castin(slope=1.0), {})["verdict"] == "inconsistent"
    # the chain computes our bound only (theirs NaN): the reason says which bound was tested
    ours_only = lit.rule_castin_worst_case(_castin(violate=True).assign(bound_theirs=np.nan),
                                           {})
    assert ours_only["verdict"] == "inconsistent"
    assert "our bound (theirs not computed)" in ours_only["reason"]


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
    assert nc["verdict"] == "not comparable" and "radius search stops at ε = 0.2" in nc["reason"]
    with pytest.raises(ValueError, match="no rows of method 'fab'"):
        lit.robust_accuracy_from_radii(_radii(), 0.3, "fab")


def test_sign_at_smallest_eps():
    parity = lit.rule_sign_at_smallest_eps(_curve([0.01, -0.01, 0.02, -0.02]),
                                           {"expect": "parity"})
    assert parity["verdict"] == "consistent" and "ε = 0.02" in parity["reason"]
    pos = _curve([0.2, 0.25, 0.3])
    assert lit.rule_sign_at_smallest_eps(pos, {"expect": "positive"})["verdict"] == "consistent"
    assert lit.rule_sign_at_smallest_eps(pos, {"expect": "parity"})["verdict"] == "inconsistent"
    floored = _curve([0.0, 0.0]).assign(robust_accuracy=0.99)
    assert lit.rule_sign_at_smallest_eps(floored, {})["verdict"] == "not comparable"


def _tables(conf_top=0.999):
    from test_literature_topology import _adv, _betti, _ood  # the topology rows' fixtures
    return {"lit_attention_growth": _growth(), "lit_castin": _castin(),
            "lit_castin_real": _castin_real(),
            "lit_confidence": _confidence(top=conf_top), "radii": _radii(0.0),
            "robust_curve": _curve([0.01, -0.01, 0.02, -0.02]), "lit_betti": _betti(),
            "lit_ood_h0": _ood(1e-6), "lit_adv_share": _adv()}


def test_evaluate_and_planted_violation_flips_summary():
    # every row but the two rivals, whose planted tables make their anchors consistent
    rows = [r for r in lit.load_literature(REGISTRY) if "rival_of" not in r]
    v = lit.evaluate_literature(_tables(), rows)
    assert list(v.columns) == ["id", "kind", "title", "source", "rule", "our_number", "low",
                               "high", "verdict", "reason", "chapter", "rival_of"]
    assert (v["verdict"] == "consistent").all()
    # every source has its arXiv id but the one no search found, which says so
    assert (v["source"].str.contains("arXiv:") | v["source"].str.contains("source not found")).all()
    assert v["source"].str.contains("source not found").sum() == 1
    n_tool = int((v["kind"] == "machinery").sum())
    n_found = len(v) - n_tool
    assert n_tool == 4 and n_found == 5
    assert literature_sentence(v) == (
        "Against the literature, 4 of 4 checks of our machinery hold, and 5 of 5 published "
        "findings re-tested on our models agree with ours.")
    assert "reproduce what others published" in literature_summary(v)
    # a planted violation of a machinery row (confidence edited) flips its verdict, the
    # sentence and the summary
    flipped = lit.evaluate_literature(_tables(conf_top=0.5), rows)
    row = flipped.set_index("id").loc["hein-relu-overconfident"]
    assert row["verdict"] == "inconsistent"
    assert literature_sentence(flipped).startswith(
        "Against the literature, 3 of 4 checks of our machinery hold (failing: ReLU networks "
        "are confident far from the data)")
    assert "should be read with that failure in mind" in literature_summary(flipped)
    # a finding that does not carry over is reported as a finding, not a tool failure
    t = _tables()
    t["lit_ood_h0"] = t["lit_ood_h0"].assign(p_value=0.5)
    s = literature_summary(lit.evaluate_literature(t, rows))
    assert "4 agree with ours and 1 does not: OOD inputs keep longer H0 lifetimes" in s
    assert "not a fault of the tools" in s


def test_a_finding_and_its_rival_are_one_question():
    # every registered row: the two rivals make 7 findings ask 5 questions, and the summary
    # and the intro's sentence say so (a reader must not add a rival's agreement as a second
    # independent success)
    rows = lit.load_literature(REGISTRY)
    v = lit.evaluate_literature(_tables(), rows)
    rivals = v.set_index("id")["rival_of"]
    assert rivals["wheeler-complexity-rises"] == "naitzat-topology-simplifies"
    assert (rivals != "").sum() == 2
    found = int((v["kind"] != "machinery").sum())
    assert found == 7
    assert ("Of 7 published findings re-tested in our setting (5 questions: 2 of them pit a "
            "finding against its registered rival, so at most one of each such pair can "
            "agree), ") in literature_summary(v)
    assert "of 7 published findings re-tested on our models (5 questions, 2 of them a finding "\
        "against its rival) " in literature_sentence(v)
    # a table without the column (an older run) reads as before
    old = literature_sentence(v.drop(columns="rival_of"))
    assert "questions" not in old and "of 7 published findings re-tested on our models " in old


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


def _attention_jacobian(x, a, w_v):
    """The closed-form Jacobian of ``X ↦ softmax(X A Xᵀ) X W_vᵀ`` (rows of ``X`` are the n
    tokens), an (nD, nD) matrix of blocks ``∂f_i/∂x_k``: with ``s_il = x_iᵀ A x_l`` and
    ``P = softmax`` over ``l``, ``∂f_i/∂x_k = P_ik W_v + Σ_j W_v x_j ⊗ Σ_l P_ij (δ_jl − P_il)
    (δ_ik (A x_l)ᵀ + δ_lk (Aᵀ x_i)ᵀ)``."""
    n, dim = x.shape
    s = x @ a @ x.T
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    v = x @ w_v.T                                   # (n, D): W_v x_j
    jac = np.zeros((n * dim, n * dim))
    for i in range(n):
        for k in range(n):
            block = p[i, k] * w_v
            for j in range(n):
                for m in range(n):
                    ds = ((a @ x[m]) if i == k else 0) + ((a.T @ x[i]) if m == k else 0)
                    block = block + np.outer(v[j], p[i, j] * ((j == m) - p[i, m]) * ds)
            jac[i * dim:(i + 1) * dim, k * dim:(k + 1) * dim] = block
    return jac


def test_castin_worst_case_on_hand_sized_head():
    """n = 2, d = 2: power iteration at the worst-case input against the closed-form Jacobian
    of one head (:func:`_attention_jacobian`) and its SVD, independent of torch.func; the
    closed form itself is checked against central finite differences."""
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
    exact = _attention_jacobian(x.numpy(), a, w_v.numpy())
    assert np.array(jac).T == pytest.approx(exact, abs=1e-7)   # the closed form is right
    ref = np.linalg.svd(exact, compute_uv=False)[0]
    assert est == pytest.approx(ref, rel=1e-6)
    # at n = 5 the closed form still bounds and matches the power iteration
    x5 = castin_worst_case(w_q, w_k, 2.0, 5)
    ref5 = np.linalg.svd(_attention_jacobian(x5.numpy(), a, w_v.numpy()), compute_uv=False)[0]
    assert local_lipschitz(f, x5, steps=200) == pytest.approx(ref5, rel=1e-6)


def test_piecewise_affine_models_are_the_ones_hein_et_al_cover():
    import torch
    from torch import nn

    from topolip.experiments.literature import attention_block_inputs, is_piecewise_affine
    relu_net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2, 3))
    assert is_piecewise_affine(relu_net)
    assert not is_piecewise_affine(nn.Sequential(nn.Linear(2, 2), nn.GELU()))
    # a ReLU transformer layer is still outside the theorem: its softmax attention
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, activation="relu",
                                       batch_first=True)
    assert not is_piecewise_affine(layer)
    x = torch.randn(3, 5, 4)
    got = attention_block_inputs(layer, x)
    assert list(got) == ["self_attn"] and got["self_attn"].shape == (3, 5, 4)
    with pytest.raises(ValueError, match="no nn.MultiheadAttention"):
        attention_block_inputs(relu_net, torch.rand(1, 1, 4, 4))


def test_query_weight_enters_the_l2_attention_bound_squared():
    """Issue 28, row 2: doubling W^Q multiplies A_h = W^Q,hᵀ W^Q,h / √d_h by 4. At n equal
    tokens the softmax is uniform and has zero derivative (the squared distances are
    quadratic), so the layer's Jacobian there is exactly P ⊗ (A_h V_hᵀ) and the measured local
    constant must grow by 4, not 2; the bound (Kim et al. Thm 3.2) by the same 4."""
    import torch

    from topolip.bounds.attention import L2SelfAttention, l2_attention_lipschitz
    from topolip.experiments.literature import local_lipschitz

    torch.manual_seed(0)
    att = L2SelfAttention(6, 2, out_bias=False).double().eval()
    doubled = L2SelfAttention(6, 2, out_bias=False).double().eval()
    doubled.load_state_dict(att.state_dict())
    with torch.no_grad():
        doubled.q_weight.mul_(2.0)
    x = torch.randn(1, 1, 6, dtype=torch.float64).expand(1, 5, 6).clone()   # 5 equal tokens
    measured = [local_lipschitz(m, x, steps=200) for m in (att, doubled)]
    assert measured[1] / measured[0] == pytest.approx(4.0, rel=1e-6)
    assert (l2_attention_lipschitz(doubled, 5) / l2_attention_lipschitz(att, 5)
            == pytest.approx(4.0, rel=1e-12))
    assert all(m <= l2_attention_lipschitz(a, 5) for m, a in zip(measured, (att, doubled),
                                                                 strict=True))
