import pytest

from invlib.stock import Inventory


def test_add_and_count():
    inv = Inventory()
    inv.add("bolt", 3, 0.5)
    inv.add("bolt", 2, 0.5)
    assert inv.count("bolt") == 5


def test_add_rejects_zero():
    with pytest.raises(ValueError):
        Inventory().add("bolt", 0, 1.0)


def test_remove_some():
    inv = Inventory()
    inv.add("nut", 4, 0.1)
    inv.remove("nut", 1)
    assert inv.count("nut") == 3
