"""How `memhub-admin import --markdown` cuts notes into memories and guesses their kind, on
small fixture files (tests/data/markdown)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhub.admin.markdown_import import guess_kind, parse, read_notes, request_id

DATA = Path(__file__).resolve().parents[1] / "data" / "markdown"


def notes_of(name: str):
    return parse((DATA / name).read_text(), name)


def test_a_list_section_gives_one_memory_per_top_level_item_with_its_continuation():
    conventions = [n for n in notes_of("CLAUDE.md") if n.section == "Project notes > Conventions"]
    assert [n.content.splitlines()[0] for n in conventions] == [
        "Always run `make lint` before pushing.", "Never log card numbers.",
        "Amounts are integers in minor units."]
    amounts = conventions[2].content
    assert "They are never floats, anywhere." in amounts
    assert "- nested detail stays with its item" in amounts
    assert {n.title for n in conventions} == {"Project notes > Conventions"}


def test_a_prose_section_is_one_memory_and_a_fenced_hash_is_not_a_heading():
    architecture = [n for n in notes_of("CLAUDE.md") if n.section and "Architecture" in n.section]
    assert len(architecture) == 1
    assert "# not a heading" in architecture[0].content
    assert architecture[0].kind == "FACT"


def test_front_matter_and_empty_sections_give_nothing():
    notes = notes_of("CLAUDE.md")
    assert not any("owner: platform" in n.content for n in notes)
    assert not any(n.section and n.section.endswith("Empty section") for n in notes)


@pytest.mark.parametrize("content,kind", [
    ("Move the nightly job to 02:00.", "TODO"),
    ("Upgrade psycopg.", "NOTE"),
    ("Sentry for error tracking.", "DECISION"),
    ("Never log card numbers.", "CONVENTION"),
    ("This service keeps the ledger for payouts.", "NOTE"),
])
def test_each_note_gets_the_kind_its_rule_gives(content, kind):
    found = [n for n in notes_of("CLAUDE.md") if n.content == content]
    assert [n.kind for n in found] == [kind]
    assert found[0].why


def test_an_adr_is_one_decision_with_its_sections():
    [adr] = notes_of("adr/0001-use-postgres.md")
    assert adr.kind == "DECISION" and adr.title == "1. Use PostgreSQL for the queue"
    assert "SKIP LOCKED" in adr.content and "## Context" in adr.content


@pytest.mark.parametrize("section,text,kind", [
    (None, "TODO: split the payout module.", "TODO"),
    ("Roadmap", "Faster imports.", "TODO"),
    (None, "We decided to keep one database.", "DECISION"),
    ("Rules", "Tabs are four spaces.", "CONVENTION"),
    (None, "Don't push to main.", "CONVENTION"),
    ("Stack", "Python 3.11.", "FACT"),
    (None, "The office is in Lyon.", "NOTE"),
])
def test_the_kind_rules(section, text, kind):
    assert guess_kind(section, text)[0] == kind


def test_the_request_id_names_the_note_and_changes_with_it():
    [first, *_] = notes_of("AGENTS.md")
    same = request_id("acme", first)
    assert same == request_id("acme", notes_of("AGENTS.md")[0])
    first.content += " Ever."
    assert request_id("acme", first) != same
    assert len(same) <= 200


def test_reading_a_missing_file_fails_before_anything_is_parsed(tmp_path):
    from memhub.errors import NotFound

    with pytest.raises(NotFound):
        read_notes([str(DATA / "CLAUDE.md"), str(tmp_path / "missing.md")])
