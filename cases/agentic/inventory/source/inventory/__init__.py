"""The inventory demo application."""
