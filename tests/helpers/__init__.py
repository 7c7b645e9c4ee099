"""Helpers every test area shares; not tests themselves."""
