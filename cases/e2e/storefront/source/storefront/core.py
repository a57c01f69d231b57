"""Order arithmetic (nothing to migrate here)."""
from collections import OrderedDict


def order_total(lines):
    totals = OrderedDict()
    for sku, quantity, price in lines:
        totals[sku] = totals.get(sku, 0) + quantity * price
    return round(sum(totals.values()), 2)
