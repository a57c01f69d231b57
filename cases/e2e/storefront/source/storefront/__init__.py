"""The storefront demo application."""
