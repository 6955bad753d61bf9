"""bindscale: can scaling alone produce compositional generalization, or do networks
need explicit binding mechanisms? Controlled, reproducible studies of the published claims."""

__version__ = "0.1.0"
