"""Built-in studies, one package each (see :mod:`bindscale.core.study` and :mod:`bindscale.core.registry`)."""
