"""Analyses run on trained models: mask search and ablations,
modularity scores, subgraph statistics, …

Each analysis is a function from trained models and task data to plain metrics.
"""
