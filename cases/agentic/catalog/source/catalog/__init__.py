"""The catalog demo application."""
