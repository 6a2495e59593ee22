"""The report's atoms looked up in the trace (referee/audit/view/atoms.py)."""

from referee.audit.view.atoms import found_in


def test_numbers_are_found_whole():
    assert not found_in("12", '{"id": "T-1203"}') and not found_in("2 bags", "12 bags")
    assert found_in("12", '{"count": 12}') and found_in("$41.60", '{"amount": "41.60"}')
