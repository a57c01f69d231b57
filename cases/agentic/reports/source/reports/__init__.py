"""The reports demo application."""
