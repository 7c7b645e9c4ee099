"""The package's version: one place, read by the build (pyproject.toml) and the User-Agent."""

__version__ = "0.1.0"
