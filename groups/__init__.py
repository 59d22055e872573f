"""Weir's groups app."""
