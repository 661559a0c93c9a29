"""Display helpers of topolip.report.format: labels and intervals as the book prints them."""

import math

import pandas as pd

from topolip.report.format import arch_ranking, comparison_label, format_interval


def test_format_interval_with_and_without_an_interval():
    assert format_interval(0.1234, 0.05, 0.2) == "0.123 [0.05, 0.2]"
    assert format_interval(0.5, -0.25, 1.0, "{:+.2f}") == "+0.50 [-0.25, +1.00]"
    assert format_interval(2.0, math.nan, math.nan) == "2"
    assert format_interval(2.0, None, None, "{:.2f}") == "2.00"


def test_comparison_label_names_architectures_and_group():
    assert comparison_label("vit vs resnet", "fgsm") == "ViT vs ResNet, FGSM"
    assert (comparison_label("attention_stack vs conv_stack", "inverted_mnist")
            == "attention stack vs convolution stack, inverted MNIST")


def test_arch_ranking_from_lowest_leaves_out_missing():
    values = pd.Series({"resnet": 12345.0, "vit": 0.5, "conv_stack": float("nan"),
                        "attention_stack": 2.0})
    assert arch_ranking(values) == "ViT (0.5) < attention stack (2) < ResNet (1.23e+04)"
    assert arch_ranking(values, "{:.1f}") == "ViT (0.5) < attention stack (2.0) < ResNet (12345.0)"


def test_tables_wrap_between_words_never_inside_one():
    # "overflow-wrap: anywhere" let a phone squeeze a column to one letter ("atten / tion-"),
    # and "word-break: break-all" would do the same: words wrap at spaces and hyphens only
    from topolip.pipeline.book import SITE_CSS
    from topolip.report.format import show_table

    out = show_table(pd.DataFrame({"claim": ["attention-smoother"], "verdict": ["inconclusive"],
                                   "measure": ["end_to_end_scale_free"]}))
    table_rules = [r for r in SITE_CSS.split("}") if ".topolip-table" in r]
    assert table_rules
    for css in (out.data, *table_rules):
        assert "anywhere" not in css and "break-all" not in css, css
    assert "break-all" not in SITE_CSS
    assert "overflow-wrap:normal" in out.data.replace(" ", "")
    # a wide table scrolls in its box, its caption staying in view as wide as the box
    assert "caption" in SITE_CSS and "position: sticky" in SITE_CSS
