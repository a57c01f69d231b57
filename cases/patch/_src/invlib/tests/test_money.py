from invlib.money import format_amount, parse_amount, round_cents


def test_format_amount():
    assert format_amount(12.5) == "12.50 EUR"


def test_parse_simple():
    assert parse_amount(" 12.50 ") == 12.5


def test_round_whole():
    assert round_cents(3.0) == 3.0
