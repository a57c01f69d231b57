"""The ledger demo application."""
