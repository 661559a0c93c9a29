"""The experiments layer (torch): one trained model in, tidy rows out (TopoLip, robustness, OOD,
baselines, sweeps), the per-model tasks on the task runner, and the theory chapter's random-layer
experiments.

The package re-exports nothing: each name has one import path, the module that defines it
(``from topolip.experiments.<module> import <name>``; :data:`topolip.API` lists the curated ones).
"""
