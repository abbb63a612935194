"""The package version, read by hatchling and by the instrumentor."""

__version__ = "0.1.0"
