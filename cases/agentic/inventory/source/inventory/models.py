"""Stock records: a read-only mapping of SKU to quantity."""
from collections import Mapping


class Stock(Mapping):
    def __init__(self, items):
        self._items = dict(items)

    def __getitem__(self, sku):
        return self._items[sku]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def total(self):
        return sum(self._items.values())
