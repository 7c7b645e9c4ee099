"""docs/explanation/recovery.md's measured tables, rendered from a figures file
(bench/recovery.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.recovery import ABSENT, PHRASES, main, markers, rendered, spliced
from bench.recovery_figures import OURS, THEIRS, Figure, read, write

DOCS = Path(__file__).parents[2] / "docs"
PAGE = DOCS / "explanation" / "recovery.md"


def figure(case: str, operator: str = OURS, table: str = "resume", **values: object) -> Figure:
    return Figure(table, case, operator, values or {"succeeded_after_s": 12.34}, "t::x")  # type: ignore[arg-type]


def test_each_case_is_a_row_with_both_operators_side_by_side_in_the_order_first_measured() -> None:
    lines = rendered([
        figure("drain", succeeded_after_s=28.94, restarts=1, counted=False),
        figure("oom", restarts=1),
        figure("drain", THEIRS, window_s=60.0, ended=False),
    ], "resume")  # fmt: skip
    assert lines[0] == f"| case | this operator | {THEIRS} |"
    assert lines[2] == (
        "| drain | `Succeeded` 28.9 s after the create; 1 restart; not counted against "
        "`backoffLimit` | watched 60 s; no end |"
    )
    assert lines[3] == f"| oom | 1 restart | {ABSENT} |"


def test_a_rerun_replaces_its_row_and_other_tables_stay_out() -> None:
    lines = rendered([
        figure("oom", restarts=2), figure("oom", restarts=1),
        figure("pull", table="node", pods_made=1),
    ], "resume")  # fmt: skip
    assert lines[2:] == [f"| oom | 1 restart | {ABSENT} |"]


def test_a_value_without_a_phrase_stops_the_rendering_naming_it() -> None:
    with pytest.raises(ValueError, match=r"no phrase for \['surprise'\] of 'oom' \(t::x\)"):
        rendered([figure("oom", surprise=1)], "resume")


def test_the_tables_go_between_their_markers_and_the_prose_stays() -> None:
    begin, end = markers("resume")
    page = f"prose before\n{begin}\nold table\n{end}\nprose after\n"
    new = spliced(page, [figure("oom", restarts=1)])
    assert new.startswith(f"prose before\n{begin}\n| case |")
    assert "old table" not in new and new.endswith(f"{end}\nprose after\n")
    assert spliced(new, [figure("oom", restarts=1)]) == new  # rendering twice changes nothing


def test_a_page_without_the_markers_of_a_table_is_refused() -> None:
    with pytest.raises(ValueError, match="bench-recovery:node:begin"):
        spliced("no markers here\n", [figure("pull", table="node")])


@pytest.mark.parametrize(
    ("page", "names"),
    [(PAGE, ("resume", "node", "hang")), (DOCS / "how-to" / "monitor.md", ("progress",))],
)
def test_the_pages_have_the_markers_of_every_table_the_tests_record(
    page: Path, names: tuple[str, ...]
) -> None:
    text = page.read_text(encoding="utf-8")
    for name in names:
        begin, end = markers(name)
        assert text.index(begin) < text.index(end), name


def test_a_table_without_a_counterpart_in_training_operator_has_one_operator_column() -> None:
    lines = rendered([figure("stopped", table="hang", restarts=1)], "hang")
    assert lines[0] == "| case | this operator |"
    assert lines[2] == "| stopped | 1 restart |"


def test_main_renders_a_written_figures_file_into_the_page(tmp_path: Path) -> None:
    figures, page = tmp_path / "recovery.json", tmp_path / "recovery.md"
    write(figures, [figure("oom", restarts=1, pods_made=8)])
    begin, end = markers("resume")
    page.write_text(f"{begin}\n{end}\n", encoding="utf-8")
    assert main([str(figures), "--page", str(page)]) == 0
    assert "| oom | 1 restart; 8 pods made |" in page.read_text(encoding="utf-8")
    assert read(figures)[0].values == {"restarts": 1, "pods_made": 8}


def test_main_says_what_is_wrong_with_a_file_that_is_not_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('[{"table": "resume"}]', encoding="utf-8")
    assert main([str(broken), "--page", str(PAGE)]) == 1
    assert "not a figures file" in capsys.readouterr().err


def test_every_phrase_reads_its_value() -> None:
    for key, phrase in PHRASES.items():
        sample = True if key in ("counted", "ended", "drained_after_end") else 3
        assert phrase(sample).strip(), key


def test_a_value_recorded_empty_says_nothing() -> None:
    lines = rendered([figure("pull", THEIRS, window_s=45.0, restarting_says="", ended=False)],
                     "resume")  # fmt: skip
    assert lines[2] == f"| pull | {ABSENT} | watched 45 s; no end |"
