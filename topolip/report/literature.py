"""What the chapter "Against the literature" (``10_literature``) and the intro say about its rows.

The verdicts come from :func:`topolip.evidence.literature.evaluate_literature`; this module only
turns them and the chapter's tables into sentences (torch-free).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from topolip.evidence.literature_topology import activation_label, complexity_profiles
from topolip.report.format import arch_label, glue_text
from topolip.schema import require_columns

__all__ = ["literature_findings", "literature_sentence", "literature_summary", "setting_words"]


def setting_words(text: str, params: Mapping[str, Any]) -> str:
    """A setting of ``data/literature.yml`` with each parameter it names replaced by its value.

    A setting says ``lit_n_points per class``: the reader sees the run's number instead of the
    parameter's name. Only ``lit_*`` words that are keys of ``params`` are replaced; any other
    text is left as it is.

    Parameters
    ----------
    text : str
        The setting (``setting_ours``).
    params : mapping
        The notebook's parameters.

    Returns
    -------
    str

    Examples
    --------
    >>> setting_words("lit_n_points per class, lit_seeds seeds, lit_other", {"lit_n_points": 100,
    ...               "lit_seeds": 5})
    '100 per class, 5 seeds, lit_other'
    """
    return re.sub(r"\blit_\w+\b", lambda m: str(params[m.group(0)]) if m.group(0) in params
                  else m.group(0), str(text))


def _titles(rows: pd.DataFrame) -> str:
    return "; ".join(rows["title"])


def _questions(found: pd.DataFrame, *, short: bool = False) -> str:
    """How many questions the re-tested findings ask: a finding and its registered rival
    (``rival_of``) are one question, of which at most one side can agree ("" when no finding
    has a rival, or the table predates the column)."""
    if "rival_of" not in found:
        return ""
    rivals = found["rival_of"].fillna("").astype(str)
    pairs = int(((rivals != "") & rivals.isin(set(found["id"]))).sum()) if "id" in found else 0
    if not pairs:
        return ""
    if short:
        return (f" ({len(found) - pairs} questions, {pairs} of them a finding against its "
                "rival)")
    return (f" ({len(found) - pairs} questions: {pairs} of them "
            f"{'pits' if pairs == 1 else 'pit'} a finding against its registered rival, so "
            "at most one of each such pair can agree)")


def literature_summary(verdicts: pd.DataFrame) -> str:
    """One paragraph: how the checks of our machinery and the re-tested findings came out,
    which rows failed, and what that means for the TopoLip verdicts.

    ``verdicts``: the ``literature`` table (``kind``, ``title``, ``verdict``, ``reason``,
    ``chapter``; with ``id`` and ``rival_of``, a finding and its registered rival are counted
    as one question), as :func:`topolip.evidence.literature.evaluate_literature` returns it.
    """
    require_columns(verdicts, ["kind", "title", "verdict", "reason", "chapter"], "literature")
    tool = verdicts[verdicts["kind"] == "machinery"]
    found = verdicts[verdicts["kind"] != "machinery"]
    tool_bad = tool[tool["verdict"] == "inconsistent"]
    found_ok = int((found["verdict"] == "consistent").sum())
    found_bad = found[found["verdict"] == "inconsistent"]
    nc = verdicts[verdicts["verdict"] == "not comparable"]
    text = (f"Of {len(tool)} checks of our machinery against published results (bounds, "
            f"attacks, confidence), {int((tool['verdict'] == 'consistent').sum())} hold")
    if len(tool_bad):
        text += (f" and {len(tool_bad)} fail: {_titles(tool_bad)}. The TopoLip verdicts that "
                 "rest on that machinery (the chapter each row names) should be read with "
                 "that failure in mind.")
    else:
        text += (", so the tools behind the TopoLip verdicts reproduce what others published; "
                 "this supports, but does not prove, those verdicts.")
    text += (f" Of {len(found)} published findings re-tested in our setting"
             f"{_questions(found)}, {found_ok} "
             f"{'agrees' if found_ok == 1 else 'agree'} with ours")
    if len(found_bad):
        text += (f" and {len(found_bad)} {'does' if len(found_bad) == 1 else 'do'} not: "
                 f"{_titles(found_bad)}. A finding that does not "
                 "carry over is a result about these small MNIST models, not a fault of the "
                 "tools; each row gives the settings side by side.")
    else:
        text += "."
    if len(nc):
        text += " Not comparable: " + "; ".join(f"{r.title} ({r.reason})"
                                                 for r in nc.itertuples()) + "."
    return text


def literature_sentence(verdicts: pd.DataFrame) -> str:
    """The one-sentence version of :func:`literature_summary`, for the intro."""
    require_columns(verdicts, ["kind", "title", "verdict"], "literature")
    tool = verdicts[verdicts["kind"] == "machinery"]
    found = verdicts[verdicts["kind"] != "machinery"]
    bad = tool.loc[tool["verdict"] == "inconsistent", "title"].tolist()
    ok = int((found["verdict"] == "consistent").sum())
    head = (f"Against the literature, {len(tool) - len(bad)} of {len(tool)} checks of our "
            "machinery hold" + (f" (failing: {'; '.join(bad)})" if bad else ""))
    return (f"{head}, and {ok} of {len(found)} published findings re-tested on our models"
            f"{_questions(found, short=True)} {'agrees' if ok == 1 else 'agree'} with ours.")


def _slope(x, y) -> float:
    x, y = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    return float(np.polyfit(x, y, 1)[0]) if len(np.unique(x)) > 1 else float("nan")


def _attention_text(growth: pd.DataFrame, castin: pd.DataFrame) -> str:
    require_columns(growth, ["arch", "seed", "block", "R", "measured", "bound"],
                    "lit_attention_growth")
    require_columns(castin, ["arch", "seed", "block", "head", "n", "measured", "bound_ours"],
                    "lit_castin")
    if growth.empty or castin.empty:
        return "This run has no ViT, so rows 1 and 2 have nothing to measure."
    slopes = [_slope(g["R"], g["measured"]) for _, g in growth.groupby(["seed", "block"])]
    ratio = growth["bound"] / growth["measured"]
    n_slopes = [_slope(g["n"], g["measured"])
                for _, g in castin.groupby(["seed", "block", "head"])]
    over = int((growth["measured"] > growth["bound"]).sum()
               + (castin["measured"] > castin["bound_ours"]).sum())
    checks = len(growth) + len(castin)
    return (f"Between R = {glue_text(growth['R'].min(), '{:g}')} and "
            f"{glue_text(growth['R'].max(), '{:g}')} the measured local constant of the "
            f"{len(slopes)} attention blocks grows with a log-log slope of "
            f"{glue_text(np.nanmin(slopes), '{:.2f}')} to {glue_text(np.nanmax(slopes), '{:.2f}')}"
            " in R, as Kim et al.'s theorem (dot-product attention has no global Lipschitz "
            "constant) predicts, while our bound "
            f"stays {glue_text(ratio.min(), '{:.3g}')} to {glue_text(ratio.max(), '{:.3g}')} "
            f"times above it. At the worst-case input of Castin et al. the slope in the token "
            f"count n is {glue_text(np.nanmedian(n_slopes), '{:.2f}')} (median over the "
            f"{len(n_slopes)} heads; their bound allows up to 0.5)"
            + ("; it does not grow as their adversarial inputs make it grow (up to about √n), "
               "so this row checks the upper bound, not its tightness"
               if np.nanmedian(n_slopes) < 0.25 else "")
            + f". In {checks} checks over both rows the measured constant "
            + (f"exceeds our bound in {over} of them: a violation refutes our derivation."
               if over else "never exceeds our bound, as a certified bound must."))


def _topology_text(betti: pd.DataFrame, confidence: pd.DataFrame) -> str:
    require_columns(betti, ["arch", "seed", "layer", "label", "betti0", "betti1"], "lit_betti")
    require_columns(confidence, ["arch", "seed", "alpha", "relu", "confidence"],
                    "lit_confidence")
    prof = complexity_profiles(betti)
    first = prof[prof["layer"] == prof["layer"].min()]["complexity"].mean()
    last_layer = prof.groupby(["arch", "seed"])["layer"].transform("max")
    last = prof[prof["layer"] == last_layer].groupby("arch")["complexity"].mean()
    n_classes = betti["label"].nunique()
    words = (f"The {n_classes} digit classes enter the MLPs with a complexity of "
             f"{glue_text(first, '{:.2g}')} (β₀ + β₁ summed over classes; "
             f"{n_classes} is the least possible), and leave the last hidden layer at "
             + ", ".join(f"{glue_text(v, '{:.2g}')} ({activation_label(a)})"
                         for a, v in last.items()) + ".")
    top = confidence[confidence["alpha"] == confidence["alpha"].max()]
    per_model = top.groupby(["arch", "seed", "relu"], as_index=False)["confidence"].mean()
    relu = per_model[per_model["relu"].astype(bool)]
    other = per_model[~per_model["relu"].astype(bool)]
    alpha = glue_text(top["alpha"].max(), "{:g}")
    if len(relu):
        words += (f" At α = {alpha} every piecewise-affine model ("
                  + " and ".join(sorted({arch_label(a) for a in relu["arch"]}))
                  + f") gives a mean max-softmax confidence of at least "
                  f"{glue_text(relu['confidence'].min(), '{:.3f}')}")
        if len(other):
            words += ("; the others (" + " and ".join(sorted({arch_label(a)
                                                              for a in other["arch"]}))
                      + f", outside the theorem) range from "
                      f"{glue_text(other['confidence'].min(), '{:.3f}')} to "
                      f"{glue_text(other['confidence'].max(), '{:.3f}')}")
        words += (". A model that grows more confident the further an input lies from the "
                  "data can rank OOD images above its own test images, which is how an OOD "
                  "AUROC below 0.5 arises in the OOD chapter.")
    return words


def literature_findings(tables) -> dict[str, str]:
    """What ``10_literature`` and the intro glue.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        ``literature``, ``lit_attention_growth``, ``lit_castin``, ``lit_betti``,
        ``lit_confidence`` (the chapter's saved tables).

    Returns
    -------
    dict
        ``lit-summary`` (:func:`literature_summary`), ``lit-sentence``
        (:func:`literature_sentence`), ``lit-attention-text`` (rows 1 and 2: slopes in R and
        n, how far our bound lies above the measured constant, violations),
        ``lit-topology-text`` (rows 3 and 4: complexity at the input and the last layer,
        confidence at the largest scale).

    Raises
    ------
    KeyError
        When a table is missing; ``ValueError`` (from :func:`topolip.schema.require_columns`)
        when one lacks a column.
    """
    need = ("literature", "lit_attention_growth", "lit_castin", "lit_betti", "lit_confidence")
    missing = [n for n in need if n not in tables]
    if missing:
        raise KeyError(f"literature_findings needs the tables {missing}")
    v = tables["literature"]
    return {"lit-summary": literature_summary(v), "lit-sentence": literature_sentence(v),
            "lit-attention-text": _attention_text(tables["lit_attention_growth"],
                                                  tables["lit_castin"]),
            "lit-topology-text": _topology_text(tables["lit_betti"], tables["lit_confidence"])}
