"""Cutting Markdown to a limit: whole sections in order, shortened runs of rows or items ending in
"… and N more" of their own syntax, never inside a code block, every <details> closed."""

import pytest

from perfgate.report.markdown_fit import fit_each, fit_markdown, utf8_bytes, utf16_units

TABLE = "| case | change |\n|---|---:|\n" + "".join(f"| c{i:03d} | +{i}% |\n" for i in range(200))
TEXT = (
    f"## headline\n\n### Failing (200)\n\n{TABLE}\n### Notes\n\n"
    + "".join(f"- note {i}\n  continued {i}\n" for i in range(100))
    + "- … and 50 more\n\n"
    + "<details><summary>All other results (300)</summary>\n\n| case |\n|---|\n"
    + "".join(f"| r{i} |\n" for i in range(300))
    + "\n</details>\n\n### Code\n\n```\n# not a heading\n"
    + "| not | a | table |\n" * 40
    + "```\n"
)


def test_text_within_the_limit_is_unchanged():
    assert fit_markdown(TEXT, 10**6) == TEXT


def test_a_long_table_keeps_its_first_rows_and_says_how_many_more():
    out = fit_markdown(TEXT, 2_000, where="the rest is in the artifact")
    assert utf8_bytes(out) <= 2_000 and out.startswith("## headline\n\n### Failing (200)")
    rows = [line for line in out.splitlines() if line.startswith("| c0") or line.startswith("| c1")]
    assert rows[0] == "| c000 | +0% |" and f"| … and {200 - len(rows)} more | |" in out
    assert out.rstrip().endswith(
        "_… 3 section(s) left out (“Notes”, “All other results (300)”, “Code”); lists "
        "shortened to fit GitHub's size limit; the rest is in the artifact._"
    )


def test_list_items_keep_their_continuation_lines_and_merge_an_earlier_count():
    notes = TEXT.split("### Notes")[1].split("<details>")[0]
    out = fit_markdown("## h\n\n### Notes" + notes, 600)
    kept = [line for line in out.splitlines() if line.startswith("- note")]
    assert kept and all(f"  continued {line.split()[-1]}" in out for line in kept)
    assert f"- … and {100 - len(kept) + 50} more" in out  # the renderer's own 50 are still counted


def test_a_code_block_is_never_cut_and_details_are_always_closed():
    for limit in (400, 1_500, 3_000, 6_000, 9_000):
        out = fit_markdown(TEXT, limit)
        assert utf8_bytes(out) <= limit
        assert out.count("```") in (0, 2) and out.count("<details>") == out.count("</details>")
        assert all(line.endswith("|") for line in out.splitlines() if line.startswith("|"))


def test_the_headline_survives_a_tiny_limit():
    out = fit_markdown(TEXT, 120)
    assert utf8_bytes(out) <= 120 and out.startswith("## headline")


def test_sizes_count_what_github_counts():
    assert utf8_bytes("🔴") == 4 and utf16_units("🔴") == 2 and utf16_units("⚠️") == 2 and len("🔴") == 1


def test_several_texts_share_a_limit_and_a_short_one_gives_the_rest_away():
    short, long_a, long_b = "## a\n\nfine\n", TEXT, TEXT.replace("headline", "second")
    out = fit_each([short, long_a, long_b], 6_000, utf16_units, "\n---\n")
    assert out[0] == short
    assert all(utf16_units(t) <= (6_000 - 2 * 5 - len(short)) // 2 + 1 for t in out[1:])
    assert sum(map(utf16_units, out)) + 10 <= 6_000
    assert out[1].startswith("## headline") and out[2].startswith("## second")


@pytest.mark.parametrize("limit", [50, 500, 5_000])
def test_any_limit_is_respected(limit):
    assert utf16_units(fit_markdown(TEXT * 3, limit, utf16_units)) <= limit
