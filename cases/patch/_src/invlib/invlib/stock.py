"""Stock of items with unit prices."""


class Inventory:
    def __init__(self):
        self.items = {}

    def add(self, name, quantity, unit_price):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        count, _ = self.items.get(name, (0, unit_price))
        self.items[name] = (count + quantity, unit_price)

    def remove(self, name, quantity):
        count, price = self.items[name]
        self.items[name] = (count - quantity, price)

    def count(self, name):
        return self.items.get(name, (0, 0))[0]

    def total_value(self):
        return sum(price for _count, price in self.items.values())
