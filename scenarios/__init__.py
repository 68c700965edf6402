"""Bundled scenarios, installed as the package ``mockstore.bundled``."""
