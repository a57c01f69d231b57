import collections.abc

from inventory.models import Stock


def test_stock_is_a_mapping():
    stock = Stock({"salt": 2, "pepper": 3})
    assert isinstance(stock, collections.abc.Mapping)
    assert dict(stock) == {"salt": 2, "pepper": 3}
    assert stock.total() == 5
