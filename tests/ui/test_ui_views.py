"""What an audit line on a schedule's page names first (as `cronwright audit` does)."""

from __future__ import annotations

from cronwright.fronts.ui.views import main_changes


def test_a_create_names_its_state_and_schedule_first() -> None:
    entry = {
        "action": "create",
        "changes": {"name": [None, "a"], "state": [None, "active"], "schedule": [None, {"every": "1h"}]},
    }
    assert main_changes(entry) == [("state", [None, "active"]), ("schedule", [None, {"every": "1h"}])]


def test_a_pause_names_what_it_changed() -> None:
    entry = {
        "action": "pause",
        "changes": {"state": ["active", "paused"], "updated_at": ["x", "y"], "pause_note": [None, "n"]},
    }
    assert main_changes(entry) == [("state", ["active", "paused"]), ("pause_note", [None, "n"])]


def test_an_update_of_other_fields_names_them_all() -> None:
    entry = {"action": "update", "changes": {"max_attempts": [1, 3]}}
    assert main_changes(entry) == [("max_attempts", [1, 3])]
