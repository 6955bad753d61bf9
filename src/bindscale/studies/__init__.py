"""Built-in studies, one package each (see :mod:`bindscale.study` and :mod:`bindscale.registry`)."""
