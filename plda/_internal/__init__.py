"""Shared internals of plda: public names inside a private package."""
