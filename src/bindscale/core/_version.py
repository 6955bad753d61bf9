"""bindscale's version, in a module of its own: the package's ``__init__`` is the API's front door
(it imports :mod:`bindscale.api` on first use), so a low module such as :mod:`bindscale.store.records`
takes the version from here rather than from the package above it."""

__version__ = "0.1.0"
