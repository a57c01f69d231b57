from inventory.core import order_total


def test_order_total():
    assert order_total([("salt", 2, 1.5), ("pepper", 1, 2.25), ("salt", 1, 1.5)]) == 6.75
