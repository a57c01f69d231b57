"""Amounts of money as floats with two decimals."""


def round_cents(amount):
    """Round to cents, half up."""
    return int(amount * 100) / 100


def parse_amount(text):
    """Parse "12.50" (and "1,234.50") into a float."""
    return float(text.strip())


def format_amount(amount, currency="EUR"):
    """Format an amount for people: "12.50 EUR"."""
    return f"{amount:.2f} {currency}"
