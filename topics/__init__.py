"""Weir's topics app."""
