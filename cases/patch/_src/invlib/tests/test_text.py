from invlib.text import slugify, title, truncate


def test_slug_separators():
    assert slugify("a  b") == "a-b"


def test_truncate_short_text_unchanged():
    assert truncate("abc", 5) == "abc"


def test_title():
    assert title("blue widget") == "Blue Widget"
