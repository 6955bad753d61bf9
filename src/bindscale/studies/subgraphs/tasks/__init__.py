"""Task generators of the subgraphs study: multi-step tasks with their computation graphs (Dziri et al. 2023)."""
