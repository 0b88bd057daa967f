"""The one place localfin's version is written: ``pyproject.toml`` reads it at build time
(``[tool.setuptools.dynamic]``), ``localfin --version`` and :data:`localfin.__version__` show it."""

__version__ = "0.1.0"
