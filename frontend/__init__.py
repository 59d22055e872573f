"""Weir's frontend app."""
